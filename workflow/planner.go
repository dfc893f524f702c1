package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/internal/s3x"
	"hash/crc32"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/manifest"
	"github.com/s3zip/s3zip/plan"
)

// PlannerS3 is everything the planner does with S3; a client without one of
// these does not compile as a planner's.
type PlannerS3 interface {
	objectGetter  // request objects, manifests, sources without a stored CRC
	objectHeader  // the destination's and the sources' checks, stored CRCs
	objectPutter  // plan, entries, parts, pad, upload record
	objectDeleter // listing sources; the read pass drops its pieces
	uploadCreator // the archive's upload, the CRC probe's
	partCopier    // the CRC probe; the read pass joins compressed pieces
	partUploader  // the read pass joins compressed pieces
	uploadCompleter
	uploadLister // aborts an earlier attempt's upload and stray creates
}

// Planner validates a request, lists or reads its sources, plans the
// archive, writes the plan to the execution's work prefix and creates the
// multipart upload.
type Planner struct {
	S3     PlannerS3
	Config Config
	Log    *slog.Logger
}

// PlanInput is the PlanArchive state's payload.
type PlanInput struct {
	Request   json.RawMessage `json:"request"`
	Execution string          `json:"execution"`
	// Reads is the read pass's outcome, when the request needed one
	// (PlanReads): the layout is planned from its entries.
	Reads *ReadsDone `json:"reads,omitempty"`
}

// Job is what every later state needs: small, whatever the archive's size.
type Job struct {
	Execution      string      `json:"execution"`
	WorkBucket     string      `json:"workBucket"`
	WorkPrefix     string      `json:"workPrefix"`
	PlanKey        string      `json:"planKey"`
	EntriesKey     string      `json:"entriesKey"`
	PartsKey       string      `json:"partsKey"`
	PadKey         string      `json:"padKey,omitempty"` // the zero pad chains start from
	Destination    Destination `json:"destination"`
	UploadID       string      `json:"uploadId"`
	WorkerParts    int         `json:"workerParts"` // part jobs: lines of parts.jsonl
	MaxConcurrency int         `json:"maxConcurrency"`
	PartsPerBatch  int         `json:"partsPerBatch"` // BuildParts' MaxItemsPerBatchPath
	// Overwrite allows replacing an existing archive; without it the upload
	// completes only if the key is still free (If-None-Match).
	Overwrite bool `json:"overwrite,omitempty"`
}

// maxManifestBytes bounds a manifest object.
const maxManifestBytes = 1 << 30

// Plan runs the planner: check the request, list or read the sources,
// lay the archive out, write the plan, then create the upload.
func (pl *Planner) Plan(ctx context.Context, in PlanInput) (*Job, error) {
	started := time.Now()
	cfg := pl.Config.Defaults()
	req, err := pl.begin(ctx, cfg, in)
	if err != nil {
		return nil, err
	}
	log := pl.logger().With("execution", in.Execution, "destination", req.Destination.URI())
	if req.Options.needsReadPass() && in.Reads == nil {
		// Planning STORED would silently ignore what the request asks for.
		return nil, requestError("options.compression %q and options.digests %q need the read pass (Planner.Start, the ReadEntries map) before the layout; this caller ran Plan directly", req.Options.Compression, req.Options.Digests)
	}
	var entries []plan.Entry
	if in.Reads != nil {
		entries, err = pl.readEntries(ctx, cfg, req, in.Execution, in.Reads)
	} else {
		entries, err = pl.listed(ctx, cfg, req)
	}
	if err != nil {
		return nil, err
	}
	p, concurrency, err := pl.layOut(ctx, cfg, req, entries, in.Execution, log)
	if err != nil {
		return nil, err
	}
	job, err := pl.writePlan(ctx, cfg, req, p, in.Execution, concurrency)
	if err != nil {
		return nil, err
	}
	if err := pl.abortEarlierAttempt(ctx, job); err != nil {
		return nil, err
	}
	if err := pl.startUpload(ctx, cfg, req, job); err != nil {
		return nil, err
	}
	st := p.Stats()
	log.Info("planned", "entries", st.Entries, "archiveBytes", st.ArchiveBytes, "streamedBytes", st.StreamedBytes,
		"copiedBytes", st.CopiedBytes, "parts", st.Parts, "strategy", p.Strategy, "uploadId", job.UploadID, "millis", time.Since(started).Milliseconds())
	return job, nil
}

// layOut plans the archive from its entries, checks it against the
// deployment's size limit and learns every CRC-32 the workers need.
func (pl *Planner) layOut(ctx context.Context, cfg Config, req *Request, entries []plan.Entry, execution string, log *slog.Logger) (*plan.Plan, int, error) {
	strategy, _ := plan.ParseStrategy(req.Options.Strategy)
	concurrency := req.Options.MaxConcurrency
	if concurrency == 0 {
		concurrency = cfg.DefaultMaxConcurrency
	}
	prefer, _ := plan.ParsePreference(req.Options.Prefer)
	opts := plan.Options{Strategy: strategy, Prefer: prefer, PartSize: req.Options.PartSize, Workers: concurrency, Model: cfg.Model, PartsPerBatch: cfg.PartsPerBatch, DirectoryPartSize: cfg.DirectoryPartSize}
	p, err := plan.Make(entries, opts)
	if err != nil {
		return nil, 0, planError(err)
	}
	warnWrongTool(log, p, entries, opts)
	if cfg.MaxArchiveBytes > 0 && p.Size > cfg.MaxArchiveBytes {
		return nil, 0, &LimitError{fmt.Sprintf("archive would be %d bytes; this deployment allows at most %d (MAX_ARCHIVE_BYTES)", p.Size, cfg.MaxArchiveBytes)}
	}
	if err := pl.resolveCRCs(ctx, cfg, p, cfg.workPrefix(execution)); err != nil {
		return nil, 0, err
	}
	if err := p.Validate(); err != nil {
		return nil, 0, fmt.Errorf("internal error: %w", err)
	}
	return p, concurrency, nil
}

// writePlan writes the plan, its entries and part jobs (and the pad chains
// start from) to the execution's work prefix, and returns the job that
// names them.
func (pl *Planner) writePlan(ctx context.Context, cfg Config, req *Request, p *plan.Plan, execution string, concurrency int) (*Job, error) {
	enc, err := p.Encode()
	if err != nil {
		return nil, err
	}
	prefix := cfg.workPrefix(execution)
	job := &Job{
		Execution: execution, WorkBucket: cfg.WorkBucket, WorkPrefix: prefix,
		PlanKey: prefix + "plan.json", EntriesKey: prefix + "entries.jsonl", PartsKey: prefix + "parts.jsonl",
		Destination: req.Destination, WorkerParts: enc.Jobs, MaxConcurrency: concurrency, PartsPerBatch: cfg.PartsPerBatch, Overwrite: req.Options.Overwrite,
	}
	objects := map[string][]byte{job.PlanKey: enc.Header, job.EntriesKey: enc.Entries, job.PartsKey: enc.Parts}
	if p.Stats().ChainParts > 0 {
		job.PadKey = prefix + "pad"
		objects[job.PadKey] = make([]byte, plan.PadSize)
	}
	for key, body := range objects {
		// No stored checksum, whatever the client's default: chains copy
		// ranges of the pad (see plan.ChainChecksums).
		plain := func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }
		if _, err := pl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &job.WorkBucket, Key: aws.String(key), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}, plain); err != nil {
			return nil, s3Error("PutObject", job.WorkBucket, key, false, err)
		}
	}
	return job, nil
}

// uploadRecordKey is where a planner records the upload it created, so that
// a planner run again for the same execution can abort it.
func (j *Job) uploadRecordKey() string { return j.WorkPrefix + "upload.json" }

// abortEarlierAttempt: a planner run again for the same execution (its
// Lambda retried after it had created an upload) aborts the earlier
// attempt's upload, which nothing else would ever complete or abort.
func (pl *Planner) abortEarlierAttempt(ctx context.Context, job *Job) error {
	doc, err := getBytes(ctx, pl.S3, job.WorkBucket, job.uploadRecordKey(), 1<<20)
	if err != nil {
		if s3x.NotFound(err) {
			return nil
		}
		return err
	}
	var earlier Job
	if json.Unmarshal(doc, &earlier) != nil || earlier.UploadID == "" {
		return nil
	}
	d := earlier.Destination
	if _, err := pl.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &earlier.UploadID}); err != nil && !s3x.NotFound(err) {
		return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
	}
	return nil
}

// startUpload creates the archive's multipart upload (with the deployment's
// default KMS key when the request names no encryption) and records it.
func (pl *Planner) startUpload(ctx context.Context, cfg Config, req *Request, job *Job) error {
	if req.Options.SSE == nil && cfg.DestinationKMSKeyID != "" {
		req.Options.SSE = &SSE{Type: "aws:kms", KMSKeyID: cfg.DestinationKMSKeyID}
	}
	var err error
	if job.UploadID, err = pl.createUpload(ctx, req); err != nil {
		return err
	}
	key := job.uploadRecordKey()
	doc, _ := json.Marshal(job)
	if _, err := pl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &job.WorkBucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))}); err != nil {
		// Nothing records the upload yet: abort it here, or it is lost.
		d := job.Destination
		_, _ = pl.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		return s3Error("PutObject", job.WorkBucket, key, false, err)
	}
	return nil
}

// begin reads and checks the request, before anything is listed or written.
func (pl *Planner) begin(ctx context.Context, cfg Config, in PlanInput) (*Request, error) {
	if in.Execution == "" {
		return nil, requestError("execution name is missing (the state machine passes $$.Execution.Name)")
	}
	req, err := pl.readRequest(ctx, cfg, in.Request)
	if err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := checkAllowed(cfg, req); err != nil {
		return nil, err
	}
	if !req.Options.Overwrite {
		if err := pl.checkDestinationFree(ctx, req.Destination); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// listed lists or reads the request's sources and checks the entry limit.
func (pl *Planner) listed(ctx context.Context, cfg Config, req *Request) ([]plan.Entry, error) {
	entries, err := pl.entries(ctx, cfg, req)
	if err != nil {
		return nil, err
	}
	if cfg.MaxEntries > 0 && len(entries) > cfg.MaxEntries {
		return nil, &LimitError{fmt.Sprintf("%d entries; this deployment allows at most %d (MAX_ENTRIES)", len(entries), cfg.MaxEntries)}
	}
	return entries, nil
}

func (pl *Planner) logger() *slog.Logger {
	if pl.Log != nil {
		return pl.Log
	}
	return slog.Default()
}

// readRequest decodes the request, following requestObject to the document
// an EventBridge rule points to.
func (pl *Planner) readRequest(ctx context.Context, cfg Config, raw json.RawMessage) (*Request, error) {
	if len(raw) == 0 {
		return nil, requestError("request is missing")
	}
	req, err := DecodeRequest(raw)
	if err != nil {
		return nil, err
	}
	if ref := req.RequestObject; ref != nil {
		if req.Source != (Source{}) || req.Destination != (Destination{}) {
			return nil, requestError("a request with requestObject must not also give source or destination")
		}
		var bad []string
		for _, msg := range []string{checkBucket("requestObject.bucket", ref.Bucket), checkKey("requestObject.key", ref.Key)} {
			if msg != "" {
				bad = append(bad, msg)
			}
		}
		if bad != nil {
			return nil, &RequestError{bad}
		}
		if cfg.ControlBucket != "" && ref.Bucket != cfg.ControlBucket {
			return nil, requestError("requestObject s3://%s/%s: request objects are read only from the control bucket %s", ref.Bucket, ref.Key, cfg.ControlBucket)
		}
		doc, err := getBytes(ctx, pl.S3, ref.Bucket, ref.Key, MaxRequestBytes)
		if err != nil {
			return nil, refError("request object", ref.Bucket, ref.Key, err)
		}
		if req, err = DecodeRequest(doc); err != nil {
			return nil, fmt.Errorf("request object s3://%s/%s: %w", ref.Bucket, ref.Key, err)
		}
		if req.RequestObject != nil {
			return nil, requestError("request object s3://%s/%s points to another request object", ref.Bucket, ref.Key)
		}
	}
	return req, nil
}

func checkAllowed(cfg Config, req *Request) error {
	var bad []string
	if m := req.Source.Manifest; m != nil {
		if m.Bucket != cfg.ControlBucket && !s3ref.Allowed(cfg.AllowedSources, m.Bucket, m.Key) {
			bad = append(bad, fmt.Sprintf("manifest s3://%s/%s is outside the sources this deployment allows", m.Bucket, m.Key))
		}
	} else if req.Source.Inventory == nil && !s3ref.Allowed(cfg.AllowedSources, req.Source.Bucket, req.Source.Prefix) {
		// An inventory's keys are checked one by one as it is read
		// (inventoryEntries); reading the report is the CDK's
		// inventoryBuckets grant.
		bad = append(bad, fmt.Sprintf("source s3://%s/%s is outside the sources this deployment allows", req.Source.Bucket, req.Source.Prefix))
	}
	if !s3ref.Allowed(cfg.AllowedDestinations, req.Destination.Bucket, req.Destination.Key) {
		bad = append(bad, fmt.Sprintf("destination %s is outside the destinations this deployment allows", req.Destination.URI()))
	}
	if msg := checkKMSKeyGranted(cfg, req.Options.SSE); msg != "" {
		bad = append(bad, msg)
	}
	if bad != nil {
		return &RequestError{bad}
	}
	return nil
}

// checkKMSKeyGranted refuses an SSE-KMS key the deployment's roles may not
// use: S3 would accept the request and answer the first write (the
// archive's CreateMultipartUpload) with AccessDenied. No key named (S3's
// AWS-managed aws/s3, whose key policy admits the account through S3) and
// SSE-S3 need no grant. The granted key may be named by its ARN or its key
// ID; an alias cannot be told apart from another key without asking KMS.
func checkKMSKeyGranted(cfg Config, sse *SSE) string {
	if !cfg.KMSKeyGranted || sse == nil || sse.Type != "aws:kms" || sse.KMSKeyID == "" {
		return ""
	}
	granted := cfg.DestinationKMSKeyID
	if granted != "" && (sse.KMSKeyID == granted || strings.HasSuffix(granted, ":key/"+sse.KMSKeyID)) {
		return ""
	}
	may, instead := "no customer-managed key", "leave kmsKeyId out for S3's AWS-managed key aws/s3"
	if granted != "" {
		may, instead = "only "+granted, "leave options.sse out for that key"
	}
	return fmt.Sprintf("options.sse.kmsKeyId %q is not granted to this deployment (its roles may encrypt archives with %s): "+
		"set the CDK context destinationKmsKeyArn (ArchiveWorkflow's destinationKmsKeyArn, env DESTINATION_KMS_KEY_ARN) to that key's ARN and deploy again, or %s",
		sse.KMSKeyID, may, instead)
}

// checkDestinationFree checks, before anything is written, that neither the
// archive's key nor its report's (ReportKey) holds an object: without
// overwrite, a run replaces neither.
func (pl *Planner) checkDestinationFree(ctx context.Context, d Destination) error {
	_, err := pl.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &d.Key})
	switch {
	case err == nil:
		return &DestinationExistsError{Bucket: d.Bucket, Key: d.Key}
	case !s3x.NotFound(err):
		return s3Error("HeadObject", d.Bucket, d.Key, false, err)
	}
	return checkReportFree(ctx, pl.S3, d)
}

// refError makes a missing or oversized request object or manifest a
// request error: the request names something it cannot be read from.
func refError(what, bucket, key string, err error) error {
	var tooBig *objectTooLargeError
	switch {
	case errors.As(err, &tooBig):
		return requestError("%s s3://%s/%s is over %d bytes", what, bucket, key, tooBig.limit)
	case s3x.NotFound(err):
		return requestError("%s s3://%s/%s does not exist", what, bucket, key)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// planError turns the planner core's input errors into request errors.
func planError(err error) error {
	var ne *plan.NameError
	var de *plan.DuplicateError
	var fe *plan.FolderClashError
	var ie *plan.InputError
	var le *plan.LimitError
	switch {
	case errors.As(err, &ne), errors.As(err, &de), errors.As(err, &fe), errors.As(err, &ie):
		return &RequestError{[]string{err.Error()}}
	case errors.As(err, &le):
		return &LimitError{le.Msg}
	}
	return err
}

// entries lists the source prefix or reads the manifest, and names the entries.
func (pl *Planner) entries(ctx context.Context, cfg Config, req *Request) ([]plan.Entry, error) {
	names, _ := plan.ParseNamePolicy(req.Options.Names)
	dups, _ := plan.ParseDuplicatePolicy(req.Options.Duplicates)
	var entries []plan.Entry
	var err error
	switch {
	case req.Source.Manifest != nil:
		entries, err = pl.manifestEntries(ctx, cfg, req, names)
	case req.Source.Inventory != nil:
		entries, err = pl.inventoryEntries(ctx, cfg, req, names)
	default:
		entries, err = pl.listEntries(ctx, cfg, req, names)
	}
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		where := "s3://" + req.Source.Bucket + "/" + req.Source.Prefix
		if m := req.Source.Manifest; m != nil {
			where = "manifest s3://" + m.Bucket + "/" + m.Key
		}
		if inv := req.Source.Inventory; inv != nil {
			where = fmt.Sprintf("inventory s3://%s/%s under prefix %q", inv.Bucket, inv.Key, req.Source.Prefix)
		}
		return nil, requestError("%s has no objects to archive; check the bucket and prefix", where)
	}
	if req.Options.Directories {
		entries = plan.AddDirectories(entries)
	}
	if err := checkSourceNames(req, entries); err != nil {
		return nil, err
	}
	if err := plan.ResolveDuplicates(entries, dups); err != nil {
		return nil, planError(err)
	}
	if err := plan.CheckFolderClashes(entries); err != nil {
		return nil, planError(err)
	}
	return entries, nil
}

// listEntries lists the source prefix. Work objects (a killed run's plans,
// pads and chain rounds, in whatever bucket it used) are never sources: a
// prefix inside the work prefix is refused, and work objects under a prefix
// that contains it are skipped.
func (pl *Planner) listEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy) ([]plan.Entry, error) {
	b, prefix := req.Source.Bucket, req.Source.Prefix
	if strings.HasPrefix(prefix, cfg.WorkPrefix) {
		return nil, requestError("source s3://%s/%s is inside the work prefix %s, which holds s3zip's temporary objects, not data to archive", b, prefix, cfg.WorkPrefix)
	}
	skipped := 0
	defer func() {
		if skipped > 0 {
			pl.logger().Warn("skipped work objects under the source prefix", "source", "s3://"+b+"/"+prefix, "workPrefix", cfg.WorkPrefix, "objects", skipped)
		}
	}()
	var entries []plan.Entry
	p := s3.NewListObjectsV2Paginator(pl.S3, &s3.ListObjectsV2Input{Bucket: &b, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Error("ListObjectsV2", b, prefix, false, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			size := aws.ToInt64(o.Size)
			if key == prefix && strings.HasSuffix(key, "/") && size == 0 {
				continue // the folder marker of the prefix itself names nothing inside it
			}
			if strings.HasPrefix(key, cfg.WorkPrefix) {
				skipped++
				continue
			}
			entries = append(entries, plan.Entry{
				Name:    plan.NameFor(key, prefix, names),
				Source:  plan.Source{Bucket: b, Key: key, ETag: aws.ToString(o.ETag)},
				Size:    size,
				ModTime: aws.ToTime(o.LastModified),
				Dir:     strings.HasSuffix(key, "/") && size == 0,
			})
		}
	}
	return entries, nil
}

func (pl *Planner) manifestEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy) ([]plan.Entry, error) {
	m := req.Source.Manifest
	doc, err := getBytes(ctx, pl.S3, m.Bucket, m.Key, maxManifestBytes)
	if err != nil {
		return nil, refError("manifest", m.Bucket, m.Key, err)
	}
	lines, err := manifest.Parse(bytes.NewReader(doc))
	if err != nil {
		return nil, &RequestError{[]string{fmt.Sprintf("manifest s3://%s/%s: %v", m.Bucket, m.Key, err)}}
	}
	var bad []string
	entries := make([]plan.Entry, len(lines))
	for i, l := range lines {
		bucket := l.Bucket
		if bucket == "" {
			bucket = req.Source.Bucket
		}
		if bucket == "" {
			bad = append(bad, fmt.Sprintf("manifest line %d: no bucket, and the request has no source.bucket", l.LineNum))
			continue
		}
		if msg := checkBucket(fmt.Sprintf("manifest line %d bucket", l.LineNum), bucket); msg != "" {
			bad = append(bad, msg)
			continue
		}
		if strings.HasPrefix(l.Key, cfg.WorkPrefix) {
			bad = append(bad, fmt.Sprintf("manifest line %d: s3://%s/%s is under the work prefix %s, which holds s3zip's temporary objects, not data to archive", l.LineNum, bucket, l.Key, cfg.WorkPrefix))
			continue
		}
		if !s3ref.Allowed(cfg.AllowedSources, bucket, l.Key) {
			bad = append(bad, fmt.Sprintf("manifest line %d: s3://%s/%s is outside the sources this deployment allows", l.LineNum, bucket, l.Key))
			continue
		}
		name := l.Name
		if name == "" {
			name = plan.NameFor(l.Key, "", names)
		}
		entries[i] = plan.Entry{Name: name, Source: plan.Source{Bucket: bucket, Key: l.Key, ETag: l.ETag}, Size: l.Size, CRC32: l.CRC32}
	}
	if bad != nil {
		return nil, &RequestError{bad}
	}
	// Every manifest object is looked up: to pin it (ETag), to date it, to
	// check the size and CRC the manifest gives, and to learn its CRC.
	// A line's problem is recorded, not returned, so that one run lists
	// every missing object and wrong size, in line order.
	problems := make(manifestProblems, len(entries))
	err = forEach(ctx, cfg.HeadConcurrency, len(entries), func(ctx context.Context, i int) error {
		e := &entries[i]
		in := &s3.HeadObjectInput{Bucket: &e.Source.Bucket, Key: &e.Source.Key, ChecksumMode: types.ChecksumModeEnabled}
		h, err := pl.S3.HeadObject(ctx, in)
		if err != nil {
			if s3x.NotFound(err) {
				problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s does not exist", lines[i].LineNum, e.Source.Bucket, e.Source.Key)
				return nil
			}
			return s3Error("HeadObject", e.Source.Bucket, e.Source.Key, true, err)
		}
		// The ETag the manifest gives is compared here rather than sent as
		// If-Match, whose failure would read as the source changing mid-run.
		if e.Source.ETag != "" && !sameETag(e.Source.ETag, aws.ToString(h.ETag)) {
			problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s has ETag %s, the manifest says %s (the object is not the one the manifest describes)", lines[i].LineNum, e.Source.Bucket, e.Source.Key, aws.ToString(h.ETag), e.Source.ETag)
			return nil
		}
		size := aws.ToInt64(h.ContentLength)
		if e.Size >= 0 && e.Size != size {
			problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s is %d bytes, the manifest says %d", lines[i].LineNum, e.Source.Bucket, e.Source.Key, size, e.Size)
			return nil
		}
		e.Size, e.Source.ETag, e.ModTime = size, aws.ToString(h.ETag), aws.ToTime(h.LastModified)
		e.Source.VersionID = aws.ToString(h.VersionId)
		if crc, ok := fullObjectCRC(h); ok {
			if e.CRC32.Known && e.CRC32.Sum != crc {
				problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s has CRC-32 %08x, the manifest says %08x", lines[i].LineNum, e.Source.Bucket, e.Source.Key, crc, e.CRC32.Sum)
				return nil
			}
			e.CRC32 = plan.KnownCRC(crc)
		}
		e.Dir = strings.HasSuffix(e.Name, "/") && size == 0
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := problems.err(); err != nil {
		return nil, err
	}
	return entries, nil
}

// resolveCRCs learns every CRC-32 the workers need before they run: from
// HeadObject when S3 stores the whole object's CRC-32, otherwise by reading
// the object. It never guesses.
func (pl *Planner) resolveCRCs(ctx context.Context, cfg Config, p *plan.Plan, workPrefix string) error {
	need := p.CRCsNeeded()
	var probe *crcProbe
	if len(need) > 0 {
		probe = &crcProbe{c: pl.S3, bucket: cfg.WorkBucket, key: workPrefix + "crc-probe"}
		defer probe.close(ctx)
	}
	tails := p.CopiedTails()
	return forEach(ctx, cfg.HeadConcurrency, len(need), func(ctx context.Context, k int) error {
		e := &p.Entries[need[k]]
		if tails[need[k]] {
			// Stored, or left to the worker that streams its start and
			// copies the rest (plan.Plan.CopiedTails).
			crc, ok, err := storedCRC(ctx, pl.S3, e)
			if ok {
				e.CRC32 = plan.KnownCRC(crc)
			}
			return err
		}
		crc, err := objectCRC(ctx, pl.S3, probe, e)
		if err != nil {
			return err
		}
		e.CRC32 = plan.KnownCRC(crc)
		return nil
	})
}

type probeS3 interface {
	uploadCreator
	partCopier
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// crcProbe has S3 compute objects' CRC-32s without downloading them: a copy
// of an object into a multipart upload created with CRC-32 answers with the
// copied bytes' CRC. The upload is never completed (so parts of any size
// will do) and is aborted when planning, or the worker's batch, ends.
type crcProbe struct {
	c           probeS3
	bucket, key string
	once        sync.Once
	uploadID    string
	err         error
	next        atomic.Int32
}

func (p *crcProbe) start(ctx context.Context) error {
	p.once.Do(func() {
		out, err := p.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &p.bucket, Key: &p.key,
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, ChecksumType: types.ChecksumTypeFullObject})
		if err != nil {
			p.err = s3Error("CreateMultipartUpload", p.bucket, p.key, false, err)
			return
		}
		p.uploadID = aws.ToString(out.UploadId)
	})
	return p.err
}

// crc returns the CRC-32 of the source's bytes, or ok=false when S3 did not
// report a usable one (then the caller reads the object). The first range
// copied is first bytes long when first > 0, else up to 5 GiB like the rest;
// a source S3 copies no range of (plan.CopyRange) is then not copied at all:
// its whole copy could only be answered as uselessly.
func (p *crcProbe) crc(ctx context.Context, src plan.Source, size, first int64) (uint32, bool, error) {
	if _, ok := plan.CopyRange(0, min(first, size), size); first > 0 && !ok {
		return 0, false, nil
	}
	var crc uint32
	for from, to := int64(0), int64(0); from < size; from = to {
		to = min(from+s3x.MaxPartSize, size)
		if from == 0 && first > 0 {
			to = min(first, size)
		}
		v, ok, err := p.rangeCRC(ctx, src, size, from, to)
		if err != nil || !ok {
			return 0, false, err
		}
		crc = zipformat.CombineCRC(crc, v, to-from)
	}
	return crc, true, nil
}

// rangeCRC returns the CRC-32 S3 computes of the bytes [from, to) of a
// source of size bytes, copied into the probe's upload; ok=false when its
// answer carries none, or when S3 copies no such range (plan.CopyRange).
func (p *crcProbe) rangeCRC(ctx context.Context, src plan.Source, size, from, to int64) (uint32, bool, error) {
	if _, copyable := plan.CopyRange(from, to, size); !copyable {
		return 0, false, nil
	}
	if err := p.start(ctx); err != nil {
		return 0, false, err
	}
	n := p.next.Add(1)%s3x.MaxParts + 1
	in := s3x.CopyPart(s3x.Part{Bucket: p.bucket, Key: p.key, UploadID: p.uploadID, Number: n}, pinned(src, size), from, to)
	out, err := p.c.UploadPartCopy(ctx, in)
	if err != nil {
		return 0, false, s3Error("UploadPartCopy", src.Bucket, src.Key, true, err)
	}
	_, answer, err := copied(out, src.Bucket, src.Key)
	if err != nil {
		return 0, false, err
	}
	v, ok := s3x.DecodeCRC(answer)
	return v, ok, nil
}

func (p *crcProbe) close(ctx context.Context) {
	if p.uploadID != "" {
		p.c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &p.bucket, Key: &p.key, UploadId: &p.uploadID})
	}
}

type crcSource interface {
	objectHeader
	objectGetter
}

// storedCRC asks S3 for the CRC-32 it stores for the whole object (ok=false
// when it stores none, another algorithm, or a composite of parts).
func storedCRC(ctx context.Context, c objectHeader, e *plan.PlacedEntry) (uint32, bool, error) {
	crc, ok, _, err := headCRC(ctx, c, e)
	return crc, ok, err
}

// headCRC is storedCRC that also says whether S3 stores a CRC-32 of the
// object's parts (a composite), which some servers answer a copy with.
func headCRC(ctx context.Context, c objectHeader, e *plan.PlacedEntry) (crc uint32, ok, composite bool, err error) {
	src := e.Source
	in := &s3.HeadObjectInput{Bucket: &src.Bucket, Key: &src.Key, ChecksumMode: types.ChecksumModeEnabled}
	if src.ETag != "" {
		in.IfMatch = &src.ETag
	}
	if src.VersionID != "" {
		in.VersionId = &src.VersionID
	}
	h, err := c.HeadObject(ctx, in)
	if err != nil {
		return 0, false, false, s3Error("HeadObject", src.Bucket, src.Key, true, err)
	}
	if aws.ToInt64(h.ContentLength) != e.Size {
		return 0, false, false, &SourceChangedError{Bucket: src.Bucket, Key: src.Key, Err: fmt.Errorf("now %d bytes, planned %d", aws.ToInt64(h.ContentLength), e.Size)}
	}
	crc, ok = fullObjectCRC(h)
	return crc, ok, !ok && aws.ToString(h.ChecksumCRC32) != "", nil
}

// objectCRC returns a source object's CRC-32: the one S3 stores for the
// whole object, else one S3 computes (probe, when given), else read.
func objectCRC(ctx context.Context, c crcSource, probe *crcProbe, e *plan.PlacedEntry) (uint32, error) {
	src := e.Source
	crc, ok, composite, err := headCRC(ctx, c, e)
	if err != nil || ok {
		return crc, err
	}
	if probe != nil {
		// A server may answer a copy of an object stored with a composite
		// CRC-32 with that composite (versitygw does; S3 answers the copied
		// bytes' CRC): a one-byte copy tells, before S3 copies it all.
		first := int64(0)
		if composite {
			first = 1
		}
		crc, ok, err := probe.crc(ctx, src, e.Size, first)
		if err != nil || ok {
			return crc, err
		}
	}
	// No whole-object CRC stored (none, another algorithm, or a composite of
	// parts) and none computed by S3: read the object.
	gin := &s3.GetObjectInput{Bucket: &src.Bucket, Key: &src.Key}
	if src.ETag != "" {
		gin.IfMatch = &src.ETag
	}
	if src.VersionID != "" {
		gin.VersionId = &src.VersionID
	}
	out, err := c.GetObject(ctx, gin)
	if err != nil {
		return 0, s3Error("GetObject", src.Bucket, src.Key, true, err)
	}
	defer out.Body.Close()
	h32 := crc32.NewIEEE()
	n, err := io.Copy(h32, out.Body)
	if err != nil {
		return 0, &TransientError{Op: fmt.Sprintf("read s3://%s/%s", src.Bucket, src.Key), Err: err}
	}
	if n != e.Size {
		return 0, &SourceChangedError{Bucket: src.Bucket, Key: src.Key, Err: fmt.Errorf("read %d bytes, planned %d", n, e.Size)}
	}
	return h32.Sum32(), nil
}

func (pl *Planner) createUpload(ctx context.Context, req *Request) (string, error) {
	d, o := req.Destination, req.Options
	in := &s3.CreateMultipartUploadInput{
		Bucket: &d.Bucket, Key: &d.Key,
		ContentType:       aws.String("application/zip"),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32,
		ChecksumType:      types.ChecksumTypeFullObject,
		Metadata:          o.Metadata,
	}
	if o.StorageClass != "" {
		in.StorageClass = types.StorageClass(o.StorageClass)
	}
	if o.SSE != nil {
		in.ServerSideEncryption = types.ServerSideEncryption(o.SSE.Type)
		if o.SSE.KMSKeyID != "" {
			in.SSEKMSKeyId = &o.SSE.KMSKeyID
		}
	}
	if len(o.Tags) > 0 {
		keys := make([]string, 0, len(o.Tags))
		for k := range o.Tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := url.Values{}
		for _, k := range keys {
			q.Set(k, o.Tags[k])
		}
		in.Tagging = aws.String(q.Encode())
	}
	// A create whose answer is lost may still have made an upload, which
	// nothing would know to abort. So the planner retries it itself, one
	// attempt at a time, and aborts the uploads of this key begun since its
	// first attempt (other than the one it keeps): before each retry, and
	// after a success or a final failure if a clean-up did not go through.
	started := time.Now().Add(-createSkew)
	strays := false // a failed attempt may have left an upload
	clean := func(keep string) {
		bg := context.WithoutCancel(ctx)
		if strays && cleanRetry.Do(bg, func(int) error { return abortStrays(bg, pl.S3, d, started, keep) }) == nil {
			strays = false
		}
	}
	var id string
	err := createRetry.Do(ctx, func(int) error {
		out, err := pl.S3.CreateMultipartUpload(ctx, in, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		if err == nil {
			id = aws.ToString(out.UploadId)
			clean(id)
			return nil
		}
		strays = true
		clean("")
		return s3Error("CreateMultipartUpload", d.Bucket, d.Key, false, err)
	})
	return id, err
}

// createRetry retries CreateMultipartUpload, waiting 100 ms × attempt²;
// cleanRetry the clean-up of the uploads its failed attempts may have left,
// at once, whatever failed.
var (
	createRetry = s3x.Retry{Attempts: 5, Backoff: s3x.Squared(100 * time.Millisecond)}
	cleanRetry  = s3x.Retry{Attempts: 3, Retryable: func(error) bool { return true }}
)

// createSkew allows for the server's clock being behind ours.
const createSkew = 5 * time.Second

// abortStrays aborts the uploads of exactly d's key initiated since t,
// except keep.
func abortStrays(ctx context.Context, c uploadLister, d Destination, since time.Time, keep string) error {
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &d.Bucket, Prefix: &d.Key})
	if err != nil {
		return s3Error("ListMultipartUploads", d.Bucket, d.Key, false, err)
	}
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) != d.Key || aws.ToTime(u.Initiated).Before(since) || aws.ToString(u.UploadId) == keep {
			continue
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: u.UploadId}); err != nil && !s3x.NotFound(err) {
			return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
		}
	}
	return nil
}

// forEach runs fn for 0..n-1 with at most limit at once; the first error
// cancels the rest and is returned.
func forEach(ctx context.Context, limit, n int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}
