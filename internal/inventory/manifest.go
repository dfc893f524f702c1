package inventory

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
)

// Format is an inventory's data file format, as manifest.json's fileFormat
// names it.
type Format string

const (
	FormatCSV     Format = "CSV"
	FormatParquet Format = "Parquet"
	FormatORC     Format = "ORC"
)

// MaxManifestBytes bounds manifest.json: a report of billions of objects lists
// some thousands of files, well under it.
const MaxManifestBytes = 64 << 20

// Manifest is an inventory report's manifest.json.
type Manifest struct {
	SourceBucket      string `json:"sourceBucket"`
	DestinationBucket string `json:"destinationBucket"` // an ARN: arn:aws:s3:::bucket
	Version           string `json:"version"`
	CreationTimestamp string `json:"creationTimestamp"` // milliseconds since the epoch, as a string
	FileFormat        string `json:"fileFormat"`
	FileSchema        string `json:"fileSchema"`
	Files             []File `json:"files"`

	Format  Format    `json:"-"` // FileFormat, checked
	Created time.Time `json:"-"` // CreationTimestamp; zero when absent
}

// File is one data file of a report, in the destination bucket.
type File struct {
	Key         string `json:"key"`
	Size        int64  `json:"size"`
	MD5Checksum string `json:"MD5checksum"`
}

// DestinationBucketName is the bucket the data files are in: the manifest
// gives it as an ARN.
func (m *Manifest) DestinationBucketName() string {
	return strings.TrimPrefix(m.DestinationBucket, "arn:aws:s3:::")
}

// ChecksumKey is the key of the manifest.checksum beside a manifest.json,
// "" when manifestKey does not name a manifest.json.
func ChecksumKey(manifestKey string) string {
	dir, ok := strings.CutSuffix(manifestKey, "manifest.json")
	if !ok || dir != "" && !strings.HasSuffix(dir, "/") {
		return ""
	}
	return dir + "manifest.checksum"
}

// ReadManifest reads the manifest.json at key and checks it against the
// manifest.checksum beside it, which must be there: S3 writes it last, so
// a report without it may still be being written.
func ReadManifest(ctx context.Context, open Opener, key string) (*Manifest, error) {
	data, err := readAll(ctx, open, key, MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	var checksum []byte
	if ck := ChecksumKey(key); ck != "" {
		checksum, err = readAll(ctx, open, ck, 1024)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("inventory: %q has no manifest.checksum beside it: S3 writes it last, once the report is complete, so this one may still be being written; "+
				"wait for it and run again (a manifest.json made by hand needs its MD5, in hex, in %q)", key, ck)
		}
		if err != nil {
			return nil, err
		}
	}
	return ParseManifest(data, checksum)
}

func readAll(ctx context.Context, open Opener, key string, limit int64) ([]byte, error) {
	rc, err := open.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("inventory: open %q: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("inventory: read %q: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("inventory: %q is over %d bytes: it is not an inventory manifest", key, limit)
	}
	return data, nil
}

// requiredColumns are what an object to archive cannot do without.
var requiredColumns = []string{"bucket", "key", "size"}

// ParseManifest parses manifest.json's bytes. checksum is manifest.checksum's
// content (the hex MD5 of data), or nil when there is none.
func ParseManifest(data, checksum []byte) (*Manifest, error) {
	if checksum != nil {
		want := strings.ToLower(string(bytes.TrimSpace(checksum)))
		sum := md5.Sum(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, &failure.ChecksumMismatchError{What: "inventory manifest.json", Algorithm: "MD5", Got: got, Source: "manifest.checksum", Want: want, Fix: readAgain}
		}
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("inventory manifest.json: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields["files"] == nil || string(fields["files"]) == "null" {
		return nil, errors.New(`inventory manifest.json has no "files" list: it is not an S3 Inventory manifest (S3 lists every data file there, "files": [] when the bucket was empty)`)
	}
	switch {
	case strings.EqualFold(m.FileFormat, string(FormatCSV)):
		m.Format = FormatCSV
	case strings.EqualFold(m.FileFormat, string(FormatParquet)):
		m.Format = FormatParquet
	case strings.EqualFold(m.FileFormat, string(FormatORC)):
		return nil, errors.New("inventory manifest.json: ORC inventories cannot be read: set the inventory configuration's output format to CSV or Apache Parquet and use the next report")
	default:
		return nil, fmt.Errorf("inventory manifest.json: fileFormat %q is not CSV or Parquet", m.FileFormat)
	}
	names, err := schemaColumns(m.Format, m.FileSchema)
	if err != nil {
		return nil, err
	}
	for _, want := range requiredColumns {
		if !slices.Contains(names, want) {
			return nil, fmt.Errorf("inventory manifest.json: fileSchema %q has no %s field: add Size to the inventory configuration's optional fields (Bucket and Key are always there in S3's reports)", m.FileSchema, want)
		}
	}
	if m.CreationTimestamp != "" {
		ms, err := strconv.ParseInt(m.CreationTimestamp, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inventory manifest.json: creationTimestamp %q is not milliseconds since the epoch", m.CreationTimestamp)
		}
		m.Created = time.UnixMilli(ms).UTC()
	}
	for i := range m.Files {
		f := &m.Files[i]
		f.MD5Checksum = strings.ToLower(f.MD5Checksum)
		if f.Key == "" {
			return nil, fmt.Errorf("inventory manifest.json: files[%d] has no key", i)
		}
		if b, err := hex.DecodeString(f.MD5Checksum); err != nil || len(b) != md5.Size {
			return nil, fmt.Errorf("inventory manifest.json: file %q: MD5checksum %q is not 32 hex digits", f.Key, f.MD5Checksum)
		}
		if f.Size < 0 {
			return nil, fmt.Errorf("inventory manifest.json: file %q: size %d is negative", f.Key, f.Size)
		}
	}
	return &m, nil
}

// parquetField matches a field of a Parquet message schema, as
// "optional binary version_id (UTF8);", and captures its name.
var parquetField = regexp.MustCompile(`(?:required|optional|repeated)\s+\w+\s+(\w+)`)

// schemaColumns lists fileSchema's field names, normalised: a CSV report
// names them "Bucket, Key, VersionId, …", a Parquet one as a message schema
// "message s3.inventory { required binary bucket (UTF8); … }".
func schemaColumns(f Format, schema string) ([]string, error) {
	var names []string
	if f == FormatParquet {
		for _, m := range parquetField.FindAllStringSubmatch(schema, -1) {
			names = append(names, column(m[1]))
		}
	} else {
		for _, n := range strings.Split(schema, ",") {
			names = append(names, column(n))
		}
	}
	if len(names) == 0 || names[0] == "" {
		return nil, fmt.Errorf("inventory manifest.json: fileSchema %q names no fields", schema)
	}
	return names, nil
}

// column normalises a field name so that CSV's and Parquet's spellings of a
// field meet: "LastModifiedDate" and "last_modified_date" are
// "lastmodifieddate", "ETag" and "e_tag" are "etag".
func column(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", ""))
}
