package create

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"

	"github.com/s3zip/s3zip/plan"
)

// MaxRequestBytes bounds a request document.
const MaxRequestBytes = 64 * 1024

// Request is what a user asks for. It is the execution input, or the object
// named by RequestObject that an EventBridge-started execution points to.
type Request struct {
	// ID is the caller's name for the request, echoed as the output's
	// requestId. Without one, the execution's name is used.
	ID            string      `json:"id,omitempty"`
	Source        Source      `json:"source"`
	Destination   Destination `json:"destination"`
	Options       Options     `json:"options"`
	RequestObject *ObjectRef  `json:"requestObject,omitempty"`
}

// ObjectRef names an S3 object.
type ObjectRef struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
}

// Source is a bucket and prefix to list, a manifest object, or an S3
// Inventory report's manifest.json, whose keys the prefix filters as a
// listing would.
type Source struct {
	Bucket    string     `json:"bucket,omitempty"`
	Prefix    string     `json:"prefix,omitempty"`
	Manifest  *ObjectRef `json:"manifest,omitempty"`
	Inventory *ObjectRef `json:"inventory,omitempty"`
}

// Destination is where the archive goes.
type Destination struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
}

// URI returns the destination as s3://bucket/key.
func (d Destination) URI() string { return "s3://" + d.Bucket + "/" + d.Key }

// SSE is the archive's server-side encryption.
type SSE struct {
	Type     string `json:"type"` // AES256 or aws:kms
	KMSKeyID string `json:"kmsKeyId,omitempty"`
}

// Options steer how the archive is built.
type Options struct {
	Strategy string `json:"strategy,omitempty"`
	// Prefer is what the auto strategy minimises, time by default or cost.
	Prefer         string            `json:"prefer,omitempty"`
	Names          string            `json:"names,omitempty"`
	Duplicates     string            `json:"duplicates,omitempty"`
	Directories    bool              `json:"directories,omitempty"`
	StorageClass   string            `json:"storageClass,omitempty"`
	SSE            *SSE              `json:"sse,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	Overwrite      bool              `json:"overwrite,omitempty"`
	MaxConcurrency int               `json:"maxConcurrency,omitempty"`
	PartSize       int64             `json:"partSize,omitempty"`
	// Compression is none, the default, or deflate or auto. Level is the
	// DEFLATE level, from 1 for fastest to 9 for smallest, or 0 for
	// DefaultLevel.
	Compression string `json:"compression,omitempty"`
	Level       int    `json:"level,omitempty"`
	// Digests are the digests computed for every entry and given in the
	// report, of which "sha256" is the only one. ChecksumsFile names one more
	// entry, such as "SHA256SUMS", listing them in the `sha256sum -c` format.
	Digests       []string `json:"digests,omitempty"`
	ChecksumsFile string   `json:"checksumsFile,omitempty"`
	// Presign asks for download links of the archive and its report in the
	// output, signed by the finalizer for this long, from 1s to 7d, as in
	// "24h" or "7d".
	Presign string `json:"presign,omitempty"`
	// KeepMetadata records each object's Content-Type, Content-Encoding,
	// Cache-Control and user metadata in its central directory header for
	// extract to write back, as docs/metadata.md describes. It costs a
	// HeadObject per object, made by the read pass's Map.
	KeepMetadata bool `json:"keepMetadata,omitempty"`
	// SplitSize and SplitEntries split the archive into archives named
	// name-0001.zip, name-0002.zip, … by split.go. Each holds at most this
	// many bytes, unless one entry alone is more, and this many entries. 0
	// leaves a bound off.
	SplitSize    int64 `json:"splitSize,omitempty"`
	SplitEntries int   `json:"splitEntries,omitempty"`
}

// DecodeRequest parses a request document strictly, so unknown fields are
// errors.
func DecodeRequest(data []byte) (*Request, error) {
	if len(data) > MaxRequestBytes {
		return nil, requestError("request is %d bytes; at most %d are accepted", len(data), MaxRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return nil, requestError("request is not valid JSON of the documented shape: %v", err)
	}
	if dec.More() {
		return nil, requestError("request has data after its JSON object")
	}
	return &r, nil
}

var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

var storageClasses = map[string]bool{"": true, "STANDARD": true, "STANDARD_IA": true, "ONEZONE_IA": true, "INTELLIGENT_TIERING": true, "GLACIER_IR": true, "GLACIER": true, "DEEP_ARCHIVE": true, "REDUCED_REDUNDANCY": true}

func checkBucket(field, name string) string {
	if name == "" {
		return field + " is missing"
	}
	if !bucketName.MatchString(name) || strings.Contains(name, "..") {
		return fmt.Sprintf("%s %q is not a valid S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)", field, name)
	}
	return ""
}

func checkKey(field, key string) string {
	switch {
	case key == "":
		return field + " is missing"
	case len(key) > 1024:
		return fmt.Sprintf("%s is %d bytes; S3 keys are at most 1024", field, len(key))
	case !utf8.ValidString(key):
		return field + " is not valid UTF-8"
	}
	return ""
}

// Validate checks everything that can be checked without S3, and reports
// every problem at once.
func (r *Request) Validate() error {
	var bad []string
	add := func(s string) {
		if s != "" {
			bad = append(bad, s)
		}
	}
	r.checkSource(add)
	r.checkDestination(add)
	r.Options.checkLayout(add)
	r.Options.checkArchiveObject(add)
	r.Options.checkRun(add)
	r.Options.checkSplit(add)
	add(checkPresign(r.Options.Presign))
	add(checkRequestID(r.ID))
	if bad != nil {
		return &failure.RequestError{Problems: bad}
	}
	return nil
}

// checkSource adds the problems of the request's source. It must name the
// objects one way, with well-formed names.
func (r *Request) checkSource(add func(string)) {
	src := r.Source
	switch {
	case src.Manifest != nil && src.Inventory != nil:
		add("source.manifest and source.inventory cannot both be given: name the objects one way")
	case src.Inventory != nil:
		add(checkBucket("source.inventory.bucket", src.Inventory.Bucket))
		add(checkKey("source.inventory.key", src.Inventory.Key))
		if !strings.HasSuffix(src.Inventory.Key, "manifest.json") {
			add(fmt.Sprintf("source.inventory.key %q does not name a manifest.json: give the manifest.json of an S3 Inventory report (…/YYYY-MM-DDTHH-MMZ/manifest.json)", src.Inventory.Key))
		}
		if src.Bucket != "" {
			add(checkBucket("source.bucket", src.Bucket))
		}
		if !utf8.ValidString(src.Prefix) {
			add("source.prefix is not valid UTF-8")
		}
	case src.Manifest != nil:
		add(checkBucket("source.manifest.bucket", src.Manifest.Bucket))
		add(checkKey("source.manifest.key", src.Manifest.Key))
		if src.Bucket != "" {
			add(checkBucket("source.bucket", src.Bucket))
		}
		if src.Prefix != "" {
			add("source.prefix cannot be used with source.manifest (names come from the manifest's keys; use options.names)")
		}
	case src.Bucket != "":
		add(checkBucket("source.bucket", src.Bucket))
		if !utf8.ValidString(src.Prefix) {
			add("source.prefix is not valid UTF-8")
		}
	default:
		add("source is missing: give source.bucket (and source.prefix), source.manifest or source.inventory")
	}
}

// checkDestination adds the problems of the archive's destination,
// including one inside the source the archive is made from.
func (r *Request) checkDestination(add func(string)) {
	src := r.Source
	add(checkBucket("destination.bucket", r.Destination.Bucket))
	add(checkKey("destination.key", r.Destination.Key))
	if strings.HasSuffix(r.Destination.Key, "/") {
		add(fmt.Sprintf("destination.key %q ends in /: name the archive object, e.g. %sarchive.zip", r.Destination.Key, r.Destination.Key))
	}
	if src.Manifest == nil && src.Bucket != "" && src.Bucket == r.Destination.Bucket && strings.HasPrefix(r.Destination.Key, src.Prefix) {
		add(fmt.Sprintf("destination s3://%s/%s is inside the source prefix s3://%s/%s: the archive would include itself on a later run; write it elsewhere", r.Destination.Bucket, r.Destination.Key, src.Bucket, src.Prefix))
	}
}

// checkLayout adds the problems of the options that lay the archive out and
// name its entries.
func (o Options) checkLayout(add func(string)) {
	if _, err := plan.ParseStrategy(o.Strategy); err != nil {
		add("options.strategy: " + err.Error())
	}
	if _, err := plan.ParsePreference(o.Prefer); err != nil {
		add("options.prefer: " + err.Error())
	}
	if _, err := plan.ParseNamePolicy(o.Names); err != nil {
		add("options.names: " + err.Error())
	}
	if _, err := plan.ParseDuplicatePolicy(o.Duplicates); err != nil {
		add("options.duplicates: " + err.Error())
	}
}

// checkArchiveObject adds the problems of the options S3 applies to the
// archive object, its storage class, encryption, tags and metadata.
func (o Options) checkArchiveObject(add func(string)) {
	if !storageClasses[o.StorageClass] {
		add(fmt.Sprintf("options.storageClass %q is not an S3 storage class", o.StorageClass))
	}
	if o.SSE != nil {
		switch o.SSE.Type {
		case "AES256":
			if o.SSE.KMSKeyID != "" {
				add("options.sse.kmsKeyId goes with type aws:kms, not AES256")
			}
		case "aws:kms":
		default:
			add(fmt.Sprintf("options.sse.type %q: want AES256 or aws:kms", o.SSE.Type))
		}
	}
	if len(o.Tags) > 10 {
		add(fmt.Sprintf("options.tags has %d tags; S3 allows 10", len(o.Tags)))
	}
	for k, v := range o.Tags {
		if k == "" || len(k) > 128 || len(v) > 256 {
			add(fmt.Sprintf("options.tags %q: keys are 1-128 characters, values at most 256", k))
		}
	}
	metaBytes := 0
	for k, v := range o.Metadata {
		metaBytes += len(k) + len(v)
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			add(fmt.Sprintf("options.metadata key %q is not a valid header name", k))
		}
	}
	if metaBytes > 2048 {
		add(fmt.Sprintf("options.metadata is %d bytes; S3 allows 2 KB of user metadata", metaBytes))
	}
}

// checkRun adds the problems of the options that size the run and say what
// it reads, its concurrency, part size, compression and digests.
func (o Options) checkRun(add func(string)) {
	if o.MaxConcurrency < 0 || o.MaxConcurrency > 10000 {
		add(fmt.Sprintf("options.maxConcurrency %d: want 1 to 10000 (0 for the deployment's default)", o.MaxConcurrency))
	}
	if o.PartSize != 0 && (o.PartSize < s3part.MinPartSize || o.PartSize > s3part.MaxPartSize) {
		add(fmt.Sprintf("options.partSize %d: want %d (5 MiB) to %d (5 GiB)", o.PartSize, s3part.MinPartSize, s3part.MaxPartSize))
	}
	switch o.Compression {
	case "", CompressNone, CompressDeflate, CompressAuto:
	default:
		add(fmt.Sprintf("options.compression %q: want none, deflate or auto", o.Compression))
	}
	for _, d := range o.Digests {
		if d != DigestSHA256 {
			add(fmt.Sprintf("options.digests: %q is not supported; the only digest is sha256", d))
		}
	}
	if o.ChecksumsFile != "" {
		if !o.sha256() {
			add(`options.checksumsFile needs options.digests ["sha256"]`)
		}
		if msg := plan.CheckName(o.ChecksumsFile); msg != "" {
			add("options.checksumsFile: " + msg)
		} else if strings.HasSuffix(o.ChecksumsFile, "/") {
			add(fmt.Sprintf("options.checksumsFile %q names a folder; name a file, e.g. SHA256SUMS", o.ChecksumsFile))
		}
	}
	if o.Level < 0 || o.Level > 9 {
		add(fmt.Sprintf("options.level %d: want 1 (fastest) to 9 (smallest), or 0 for the default %d", o.Level, DefaultLevel))
	} else if o.Level != 0 && !o.needsReadPass() {
		add("options.level applies to compression deflate or auto; set options.compression too")
	}
}

// Compression settings are the values of Options.Compression.
const (
	CompressNone    = "none"
	CompressDeflate = "deflate"
	CompressAuto    = "auto"

	// DefaultLevel is the DEFLATE level when the request gives none.
	DefaultLevel = 6
	// DefaultPieceSize is how much of an object one read job reads.
	DefaultPieceSize = 64 << 20
	// autoSample is how much of a piece's start auto compresses to decide
	// whether the rest is worth it.
	autoSample = 256 << 10
	// autoMaxRatio is the compressed/uncompressed ratio of the sample above
	// which auto stores the entry. Below a 10% saving, DEFLATE costs readers
	// time for little.
	autoMaxRatio = 0.9
)
