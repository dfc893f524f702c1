package extract

// The extract workflow's four handlers, as the state machine
// (statemachine/extract.asl.json) runs them: Plan, a Distributed Map of
// Batch, Finalize, and Abort on any failure. Run (local.go) runs the same
// handlers in process for the CLI.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/archive"
	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/workflow"
)

// ExecutionMetadata is the user metadata key (x-amz-meta-s3zip-execution)
// every object an extraction writes carries: its execution name. Abort
// deletes only objects that carry its own.
const ExecutionMetadata = "s3zip-execution"

// RequestDoc is the extract request (the state machine's input).
type RequestDoc struct {
	Archive struct {
		Bucket string `json:"bucket"`
		Key    string `json:"key"`
	} `json:"archive"`
	// Destination is optional: without it the archive is extracted into
	// the deployment's DestinationPrefix + its name (Config.derivedPrefix).
	Destination *struct {
		Bucket string `json:"bucket"`
		Prefix string `json:"prefix"`
	} `json:"destination,omitempty"`
	Options struct {
		Overwrite       bool  `json:"overwrite,omitempty"`
		SkipUnsupported bool  `json:"skipUnsupported,omitempty"`
		SmallStored     int64 `json:"smallStored,omitempty"`
		ReadGroup       int64 `json:"readGroup,omitempty"`
		CopyPart        int64 `json:"copyPart,omitempty"`
		MaxConcurrency  int   `json:"maxConcurrency,omitempty"`
	} `json:"options"`
}

// PlanInput is the Plan state's payload.
type PlanInput struct {
	Request   json.RawMessage `json:"request"`
	Execution string          `json:"execution"`
}

// Extraction is the planner's output and the state every later step gets:
// small, whatever the archive (the jobs are in the work bucket).
type Extraction struct {
	Execution string `json:"execution"`
	Archive   struct {
		Bucket        string `json:"bucket"`
		Key           string `json:"key"`
		ETag          string `json:"etag"`
		Size          int64  `json:"size"`
		ChecksumCRC32 string `json:"checksumCRC32,omitempty"`
	} `json:"archive"`
	DestBucket string    `json:"destinationBucket"`
	Prefix     string    `json:"prefix"`
	Overwrite  bool      `json:"overwrite"`
	Started    time.Time `json:"started"` // less a margin for clocks: uploads begun since may be this run's
	WorkBucket string    `json:"workBucket"`
	WorkPrefix string    `json:"workPrefix"` // this execution's, ends in /
	JobsKey    string    `json:"jobsKey"`    // JSONL, one Job a line (the Map's ItemReader)
	SkippedKey string    `json:"skippedKey,omitempty"`
	// Jobs is how many jobs there are (0: nothing to extract, the Map is skipped).
	Jobs           int   `json:"jobs"`
	BatchSize      int   `json:"batchSize"`      // MaxItemsPerBatchPath
	MaxConcurrency int   `json:"maxConcurrency"` // MaxConcurrencyPath
	Entries        int   `json:"entries"`
	Objects        int   `json:"objects"`
	Bytes          int64 `json:"bytes"`
	Copied         int64 `json:"copiedBytes"`
	Read           int64 `json:"readBytes"`
	Skipped        int   `json:"skipped"`
}

func (e *Extraction) archive() *archive.Archive {
	return &archive.Archive{Bucket: e.Archive.Bucket, Key: e.Archive.Key, ETag: e.Archive.ETag, Size: e.Archive.Size, ChecksumCRC32: e.Archive.ChecksumCRC32}
}

// reportKey is the report object's key.
func (e *Extraction) reportKey() string { return e.Prefix + ReportName }

// maxJobJSON bounds one job's JSON, so that a batch fits the Distributed
// Map's 256 KiB input (ItemBatcher MaxInputBytesPerBatch).
const maxJobJSON = 64 << 10

// Planner is the Plan state's handler.
type Planner struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Plan reads the archive's end records and central directory with ranged
// GETs (pinned by its ETag from then on), refuses a bad archive or existing
// objects before anything is written, and writes the jobs to the work prefix.
func (p *Planner) Plan(ctx context.Context, in PlanInput) (*Extraction, error) {
	cfg := p.Config.Defaults()
	started := time.Now().Add(-5 * time.Minute)
	var req RequestDoc
	dec := json.NewDecoder(bytes.NewReader(in.Request))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, requestError("%v (want {\"archive\":{\"bucket\",\"key\"},\"destination\":{\"bucket\",\"prefix\"},\"options\":{…}}; docs/contract.md)", err)
	}
	if in.Execution == "" {
		return nil, requestError("no execution name")
	}
	ex := &Extraction{Execution: in.Execution, Started: started, WorkBucket: cfg.WorkBucket, WorkPrefix: cfg.workPrefix(in.Execution)}
	ex.Archive.Bucket, ex.Archive.Key = req.Archive.Bucket, req.Archive.Key
	var problems []string
	if req.Archive.Bucket == "" || req.Archive.Key == "" || strings.HasSuffix(req.Archive.Key, "/") {
		problems = append(problems, "archive: want a bucket and the key of a ZIP object")
	} else if !allowed(cfg.AllowedArchives, req.Archive.Bucket, req.Archive.Key) {
		problems = append(problems, fmt.Sprintf("archive s3://%s/%s is outside the archives this deployment may read (%s)", req.Archive.Bucket, req.Archive.Key, strings.Join(cfg.AllowedArchives, ", ")))
	}
	if d := req.Destination; d != nil {
		ex.DestBucket, ex.Prefix = d.Bucket, d.Prefix
		if d.Bucket == "" {
			problems = append(problems, "destination.bucket is empty")
		}
		if d.Prefix != "" && !strings.HasSuffix(d.Prefix, "/") {
			problems = append(problems, fmt.Sprintf("destination.prefix %q must end in /", d.Prefix))
		}
	} else if req.Archive.Key != "" {
		ex.DestBucket = cfg.DestinationBucket
		if ex.DestBucket == "" {
			ex.DestBucket = req.Archive.Bucket
		}
		var err error
		if ex.Prefix, err = cfg.derivedPrefix(req.Archive.Key); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if ex.DestBucket != "" && !allowed(cfg.AllowedDestinations, ex.DestBucket, ex.Prefix) {
		problems = append(problems, fmt.Sprintf("destination s3://%s/%s is outside the destinations this deployment may write (%s)", ex.DestBucket, ex.Prefix, strings.Join(cfg.AllowedDestinations, ", ")))
	}
	o := req.Options
	if o.SmallStored < -1 || o.ReadGroup < 0 || o.CopyPart < 0 || o.MaxConcurrency < 0 {
		problems = append(problems, "options: sizes and maxConcurrency must not be negative (smallStored may be -1: copy every STORED entry)")
	}
	if len(problems) > 0 {
		return nil, &RequestError{problems}
	}
	ex.Overwrite = o.Overwrite
	ex.BatchSize, ex.MaxConcurrency = cfg.BatchSize, cfg.MaxConcurrency
	if o.MaxConcurrency > 0 {
		ex.MaxConcurrency = o.MaxConcurrency
	}
	opts := Options{SkipUnsupported: o.SkipUnsupported, SmallStored: o.SmallStored, ReadGroup: o.ReadGroup, CopyPart: o.CopyPart}

	a, err := archive.Open(ctx, p.S3, req.Archive.Bucket, req.Archive.Key)
	if err != nil {
		return nil, err
	}
	ex.Archive.ETag, ex.Archive.Size, ex.Archive.ChecksumCRC32 = a.ETag, a.Size, a.ChecksumCRC32
	ex.Entries = len(a.Entries)
	keep, skipped, err := Check(a, ex.Prefix, opts)
	if err != nil {
		return nil, err
	}
	starts, err := a.DataStarts(ctx, Copies(a, keep, opts), 16)
	if err != nil {
		return nil, sourceChanged(err, a)
	}
	plan, err := PlanJobs(a, ex.Prefix, keep, starts, skipped, opts)
	if err != nil {
		return nil, err
	}
	if !ex.Overwrite {
		if err := refuseExisting(ctx, p.S3, ex.DestBucket, ex.Prefix, plan); err != nil {
			return nil, err
		}
	}
	jobs := splitForMap(plan.Jobs)
	ex.Jobs, ex.Objects, ex.Bytes, ex.Copied, ex.Read, ex.Skipped = len(jobs), plan.Objects, plan.Bytes, plan.Copied, plan.Read, len(plan.Skipped)
	var buf bytes.Buffer
	for i := range jobs {
		jobs[i].Index = i
		line, err := json.Marshal(&jobs[i])
		if err != nil {
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if len(plan.Skipped) > 0 {
		ex.SkippedKey = ex.WorkPrefix + "skipped.json"
		doc, _ := json.Marshal(plan.Skipped)
		if err := putWork(ctx, p.S3, ex.WorkBucket, ex.SkippedKey, doc); err != nil {
			return nil, err
		}
	}
	ex.JobsKey = ex.WorkPrefix + "jobs.jsonl"
	if err := putWork(ctx, p.S3, ex.WorkBucket, ex.JobsKey, buf.Bytes()); err != nil {
		return nil, err
	}
	logf(p.Log).Info("extraction planned", "execution", ex.Execution, "archive", a.String(), "entries", ex.Entries,
		"objects", ex.Objects, "jobs", ex.Jobs, "copied", ex.Copied, "read", ex.Read, "skipped", ex.Skipped)
	return ex, nil
}

// splitForMap splits read jobs whose JSON would exceed maxJobJSON into
// read jobs of neighbouring items (each reads from its first item's local
// header to its last item's bound).
func splitForMap(jobs []Job) []Job {
	var out []Job
	for _, j := range jobs {
		if j.Kind != KindRead {
			out = append(out, j)
			continue
		}
		var cur []Item
		size := 0
		flush := func() {
			if len(cur) > 0 {
				out = append(out, Job{Kind: KindRead, Items: cur, Ranges: []Range{{cur[0].Offset, cur[len(cur)-1].Bound}}})
				cur, size = nil, 0
			}
		}
		for _, it := range j.Items {
			b, _ := json.Marshal(&it)
			if size+len(b) > maxJobJSON {
				flush()
			}
			cur, size = append(cur, it), size+len(b)+1
		}
		flush()
	}
	return out
}

// BatchInput is one Distributed Map batch: ItemBatcher's Items and its
// BatchInput ({"job.$": "$"}).
type BatchInput struct {
	Items      []Job `json:"Items"`
	BatchInput struct {
		Job Extraction `json:"job"`
	} `json:"BatchInput"`
}

// BatchOutput is what a batch wrote (the ResultWriter keeps it in S3).
type BatchOutput struct {
	Written    []Written `json:"written"`
	VerifyRead int64     `json:"verifyReadBytes,omitempty"`
}

// Worker is the Map's handler: it runs a batch of jobs.
type Worker struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Batch runs the batch's jobs, at most Config.Workers at once. Every object
// is written with If-None-Match: * unless overwriting, every archive read
// and copy with If-Match on the planned ETag. A batch run again (after a
// transient failure or a timeout) finds the objects its last attempt wrote
// by their execution metadata and writes only the rest. On failure it
// aborts the uploads it has open; what it wrote is Abort's to delete.
func (w *Worker) Batch(ctx context.Context, in BatchInput) (*BatchOutput, error) {
	cfg := w.Config.Defaults()
	ex := &in.BatchInput.Job
	if ex.JobsKey == "" || ex.Archive.ETag == "" {
		return nil, requestError("batch input has no planned extraction (BatchInput.job)")
	}
	x := newExecutor(w.S3, ex)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Workers)
	for _, j := range in.Items {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err // failed or interrupted: start no more jobs
			}
			if err := x.run(gctx, j); err != nil {
				return fmt.Errorf("job %d: %w", j.Index, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		x.abortOpen(context.WithoutCancel(ctx))
		return nil, err
	}
	return &BatchOutput{Written: x.sortedWritten(), VerifyRead: x.verifyRead.Load()}, nil
}

// FinalizeInput is the Finalize state's payload: the extraction and, when
// the Map ran, where its results are.
type FinalizeInput struct {
	Extraction
	Results *workflow.MapResults `json:"results,omitempty"`
}

// Summary is the Finalize Lambda's output: small, the objects are in the report.
type Summary struct {
	Archive        string `json:"archive"`
	ETag           string `json:"etag"`
	Entries        int    `json:"entries"`
	Objects        int    `json:"objects"`
	Skipped        int    `json:"skipped"`
	Report         string `json:"report"`
	ExtractedBytes int64  `json:"extractedBytes"`
	CopiedBytes    int64  `json:"copiedBytes"`
	StreamedBytes  int64  `json:"streamedBytes"`
}

// Finalizer is the Finalize state's handler.
type Finalizer struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Finalize returns the summary of Result.
func (f *Finalizer) Finalize(ctx context.Context, in FinalizeInput) (*Summary, error) {
	res, err := f.finalize(ctx, in)
	if err != nil {
		return nil, err
	}
	return &Summary{Archive: res.Archive, ETag: res.ETag, Entries: res.Entries, Objects: len(res.Objects), Skipped: len(res.Skipped),
		Report: res.Report, ExtractedBytes: res.Extracted, CopiedBytes: res.Copied, StreamedBytes: res.Streamed}, nil
}

// finalize gathers the batches' results from S3, checks that every planned
// object was written exactly once, writes the report, aborts uploads left
// by retried batches and deletes the work objects. It may run again after
// a failure (the report it wrote is recognised as its own).
func (f *Finalizer) finalize(ctx context.Context, in FinalizeInput) (*Result, error) {
	ex := &in.Extraction
	jobs, err := readJobs(ctx, f.S3, ex)
	if err != nil {
		return nil, err
	}
	var written []Written
	var verifyRead int64
	if ex.Jobs > 0 {
		if in.Results == nil || in.Results.ResultWriterDetails == nil {
			return nil, &IncompleteError{fmt.Sprintf("%d jobs were planned but the input has no Map results", ex.Jobs)}
		}
		outs, err := readBatchOutputs(ctx, f.S3, in.Results.ResultWriterDetails)
		if err != nil {
			return nil, err
		}
		for _, o := range outs {
			written = append(written, o.Written...)
			verifyRead += o.VerifyRead
		}
	}
	planned := map[string]bool{}
	for _, j := range jobs {
		for _, it := range j.Items {
			planned[it.Key] = true
		}
	}
	seen := map[string]bool{}
	var problems []string
	for _, w := range written {
		switch {
		case !planned[w.Key]:
			problems = append(problems, fmt.Sprintf("%s was written but not planned", w.Key))
		case seen[w.Key]:
			problems = append(problems, fmt.Sprintf("%s is in the results twice", w.Key))
		}
		seen[w.Key] = true
	}
	for k := range planned {
		if !seen[k] {
			problems = append(problems, fmt.Sprintf("%s was planned but no batch reports writing it", k))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, &IncompleteError{fmt.Sprintf("s3://%s/%s: %d problems with the workers' results: %s", ex.DestBucket, ex.Prefix, len(problems), strings.Join(problems[:min(len(problems), 10)], "; "))}
	}
	sort.Slice(written, func(i, j int) bool { return written[i].Key < written[j].Key })
	var skipped []Skipped
	if ex.SkippedKey != "" {
		doc, err := getWork(ctx, f.S3, ex.WorkBucket, ex.SkippedKey)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(doc, &skipped); err != nil {
			return nil, fmt.Errorf("s3://%s/%s: %w", ex.WorkBucket, ex.SkippedKey, err)
		}
	}
	res := &Result{Archive: fmt.Sprintf("s3://%s/%s", ex.Archive.Bucket, ex.Archive.Key), ETag: ex.Archive.ETag, Entries: ex.Entries,
		Objects: written, Skipped: skipped, Copied: ex.Copied, Streamed: ex.Read, VerifyRead: verifyRead}
	for _, w := range written {
		res.Extracted += w.Size
	}
	x := newExecutor(f.S3, ex)
	if res.Report, err = x.writeReport(ctx, res); err != nil {
		return nil, err
	}
	// A batch that failed and was run again may have left uploads open.
	keys := planned
	keys[ex.reportKey()] = true
	if err := sweepUploads(ctx, f.S3, ex, keys); err != nil {
		return nil, err
	}
	if err := deleteWork(ctx, f.S3, ex.WorkBucket, ex.WorkPrefix); err != nil {
		return nil, err
	}
	logf(f.Log).Info("extraction done", "execution", ex.Execution, "objects", len(written), "bytes", res.Extracted, "report", res.Report)
	return res, nil
}

// AbortInput is the Abort state's payload: the state when the failure was
// caught (the request, or the extraction), the error, the execution.
type AbortInput struct {
	State     json.RawMessage `json:"state"`
	Error     json.RawMessage `json:"error"`
	Execution string          `json:"execution"`
}

// AbortOutput is the root cause, for the Fail state.
type AbortOutput struct {
	Error string `json:"error"`
	Cause string `json:"cause"`
}

// Aborter is the Abort state's handler.
type Aborter struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Abort undoes a failed execution: it aborts the multipart uploads of the
// planned keys begun since the execution started, deletes the objects
// under the destination that carry this execution's metadata (each with
// If-Match on the ETag it saw, so a concurrent writer's object is never
// deleted) and deletes the work prefix. It is idempotent.
func (a *Aborter) Abort(ctx context.Context, in AbortInput) (*AbortOutput, error) {
	cfg := a.Config.Defaults()
	var cause struct{ Error, Cause string }
	_ = json.Unmarshal(in.Error, &cause)
	execution := in.Execution
	var ex Extraction
	_ = json.Unmarshal(in.State, &ex)
	if ex.Execution != "" {
		execution = ex.Execution
	}
	if execution == "" {
		return nil, requestError("abort: no execution name")
	}
	workPrefix := cfg.workPrefix(execution)
	if ex.WorkPrefix != "" {
		workPrefix = ex.WorkPrefix
	}
	workBucket := cfg.WorkBucket
	if ex.WorkBucket != "" {
		workBucket = ex.WorkBucket
	}
	if cause.Error == "States.ExceedToleratedFailureThreshold" {
		if e, c := firstFailedBatch(ctx, a.S3, workBucket, workPrefix); e != "" {
			cause.Error, cause.Cause = e, c
		}
	}
	if ex.JobsKey != "" && ex.DestBucket != "" {
		// Without the jobs (never written, or lost) every key under the
		// prefix is looked at; only this execution's are touched.
		var keys map[string]bool
		if jobs, err := readJobs(ctx, a.S3, &ex); err == nil {
			keys = map[string]bool{ex.reportKey(): true}
			for _, j := range jobs {
				for _, it := range j.Items {
					keys[it.Key] = true
				}
			}
		} else if !isNotFound(err) {
			return nil, err
		}
		if err := sweepUploads(ctx, a.S3, &ex, keys); err != nil {
			return nil, err
		}
		n, err := deleteOwn(ctx, a.S3, &ex, keys)
		if err != nil {
			return nil, err
		}
		logf(a.Log).Info("extraction aborted", "execution", execution, "deleted", n, "error", cause.Error)
	}
	if err := deleteWork(ctx, a.S3, workBucket, workPrefix); err != nil {
		return nil, err
	}
	if cause.Error == "" {
		cause.Error = "Error"
	}
	return &AbortOutput{Error: cause.Error, Cause: cause.Cause}, nil
}

// firstFailedBatch reads the Map's FAILED result files under the work
// prefix for the first failed batch's own error (a failed Distributed Map
// reports only States.ExceedToleratedFailureThreshold).
func firstFailedBatch(ctx context.Context, c Client, bucket, prefix string) (string, string) {
	keys, err := listKeys(ctx, c, bucket, prefix+"map/")
	if err != nil {
		return "", ""
	}
	for _, k := range keys {
		if !strings.Contains(k, "/FAILED_") {
			continue
		}
		doc, err := getWork(ctx, c, bucket, k)
		if err != nil {
			continue
		}
		var failed []workflow.ChildResult
		if json.Unmarshal(doc, &failed) == nil && len(failed) > 0 && failed[0].Error != "" {
			return failed[0].Error, failed[0].Cause
		}
	}
	return "", ""
}

// sweepUploads aborts the multipart uploads under the destination prefix
// of the given keys (nil: any key) begun since the execution started.
func sweepUploads(ctx context.Context, c Client, ex *Extraction, keys map[string]bool) error {
	d := ex.DestBucket
	var errs []error
	in := &s3.ListMultipartUploadsInput{Bucket: &d, Prefix: aws.String(ex.Prefix)}
	for {
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			return classifyS3(fmt.Errorf("list uploads under s3://%s/%s: %w", d, ex.Prefix, err))
		}
		for _, u := range out.Uploads {
			if keys != nil && !keys[aws.ToString(u.Key)] || u.Initiated != nil && u.Initiated.Before(ex.Started) {
				continue
			}
			if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d, Key: u.Key, UploadId: u.UploadId}); err != nil && !s3ref.IsCode(err, "NoSuchUpload") {
				errs = append(errs, fmt.Errorf("abort upload of s3://%s/%s: %w", d, aws.ToString(u.Key), err))
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	return classifyS3(errors.Join(errs...))
}

// deleteOwn deletes the objects under the destination prefix (of keys; nil:
// any) whose metadata names this execution, each only if its ETag is still
// the one seen.
func deleteOwn(ctx context.Context, c Client, ex *Extraction, keys map[string]bool) (int, error) {
	all, err := listKeys(ctx, c, ex.DestBucket, ex.Prefix)
	if err != nil {
		return 0, err
	}
	var cand []string
	for _, k := range all {
		if keys == nil || keys[k] {
			cand = append(cand, k)
		}
	}
	var mu sync.Mutex
	n := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range cand {
		g.Go(func() error {
			etag, ours, err := owner(gctx, c, ex.DestBucket, k, ex.Execution)
			if err != nil || !ours {
				return err
			}
			_, err = c.DeleteObject(gctx, &s3.DeleteObjectInput{Bucket: &ex.DestBucket, Key: &k, IfMatch: &etag})
			if err != nil && !isNotFound(err) {
				if s3ref.IsCode(err, "PreconditionFailed") {
					return nil // replaced since: someone else's now
				}
				return classifyS3(fmt.Errorf("delete s3://%s/%s: %w", ex.DestBucket, k, err))
			}
			mu.Lock()
			n++
			mu.Unlock()
			return nil
		})
	}
	return n, g.Wait()
}

// owner reads an object's ETag and whether this execution wrote it.
func owner(ctx context.Context, c Client, bucket, key, execution string) (string, bool, error) {
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if isNotFound(err) {
			return "", false, nil
		}
		return "", false, classifyS3(fmt.Errorf("head s3://%s/%s: %w", bucket, key, err))
	}
	return aws.ToString(h.ETag), h.Metadata[ExecutionMetadata] == execution, nil
}

func isNotFound(err error) bool {
	var re *smithyhttp.ResponseError
	return s3ref.IsCode(err, "NoSuchKey", "NotFound", "NoSuchUpload") || errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

func classifyS3(err error) error {
	if err != nil && transient(err) {
		return &TransientError{err}
	}
	return err
}

func listKeys(ctx context.Context, c Client, bucket, prefix string) ([]string, error) {
	var keys []string
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix}
	for {
		out, err := c.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, classifyS3(fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err))
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return keys, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// deleteWork deletes every object under an execution's work prefix.
func deleteWork(ctx context.Context, c Client, bucket, prefix string) error {
	keys, err := listKeys(ctx, c, bucket, prefix)
	if err != nil {
		return err
	}
	for start := 0; start < len(keys); start += 1000 {
		var ids []types.ObjectIdentifier
		for _, k := range keys[start:min(start+1000, len(keys))] {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return classifyS3(fmt.Errorf("delete work objects under s3://%s/%s: %w", bucket, prefix, err))
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete work object s3://%s/%s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	return nil
}

func putWork(ctx context.Context, c Client, bucket, key string, doc []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc))),
		ChecksumCRC32: aws.String(crcBase64(crc32.ChecksumIEEE(doc)))})
	if err != nil {
		return classifyS3(fmt.Errorf("put work object s3://%s/%s: %w", bucket, key, err))
	}
	return nil
}

// maxWorkObject bounds a work object read whole.
const maxWorkObject = 1 << 30

func getWork(ctx context.Context, c Client, bucket, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("work object s3://%s/%s: %w", bucket, key, err)
		}
		return nil, classifyS3(fmt.Errorf("get work object s3://%s/%s: %w", bucket, key, err))
	}
	defer out.Body.Close()
	doc, err := io.ReadAll(io.LimitReader(out.Body, maxWorkObject+1))
	if err != nil {
		return nil, classifyS3(fmt.Errorf("read work object s3://%s/%s: %w", bucket, key, err))
	}
	if len(doc) > maxWorkObject {
		return nil, fmt.Errorf("work object s3://%s/%s is over %d bytes", bucket, key, maxWorkObject)
	}
	return doc, nil
}

// readJobs reads the planned jobs (JSONL).
func readJobs(ctx context.Context, c Client, ex *Extraction) ([]Job, error) {
	doc, err := getWork(ctx, c, ex.WorkBucket, ex.JobsKey)
	if err != nil {
		return nil, err
	}
	return decodeJobs(doc, ex.WorkBucket+"/"+ex.JobsKey)
}

func decodeJobs(doc []byte, where string) ([]Job, error) {
	var jobs []Job
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var j Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return nil, fmt.Errorf("jobs s3://%s line %d: %w", where, len(jobs)+1, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, sc.Err()
}

// readBatchOutputs reads the batches' outputs from the ResultWriter's manifest.
func readBatchOutputs(ctx context.Context, c Client, d *workflow.ResultWriterDetails) ([]BatchOutput, error) {
	doc, err := getWork(ctx, c, d.Bucket, d.Key)
	if err != nil {
		return nil, fmt.Errorf("Map results manifest: %w", err)
	}
	var m workflow.ResultManifest
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("Map results manifest s3://%s/%s: %w", d.Bucket, d.Key, err)
	}
	if n := len(m.ResultFiles.Failed) + len(m.ResultFiles.Pending); n > 0 {
		return nil, &IncompleteError{fmt.Sprintf("Map results: %d result files of failed or pending batches", n)}
	}
	bucket := m.DestinationBucket
	if bucket == "" {
		bucket = d.Bucket
	}
	var outs []BatchOutput
	for _, f := range m.ResultFiles.Succeeded {
		doc, err := getWork(ctx, c, bucket, f.Key)
		if err != nil {
			return nil, fmt.Errorf("Map result file: %w", err)
		}
		var children []workflow.ChildResult
		if err := json.Unmarshal(doc, &children); err != nil {
			return nil, fmt.Errorf("Map result file s3://%s/%s: %w", bucket, f.Key, err)
		}
		for _, ch := range children {
			if ch.Status != "SUCCEEDED" {
				return nil, &IncompleteError{fmt.Sprintf("Map result file s3://%s/%s: a batch has status %s (%s: %s)", bucket, f.Key, ch.Status, ch.Error, ch.Cause)}
			}
			var out BatchOutput
			if err := json.Unmarshal([]byte(ch.Output), &out); err != nil {
				return nil, fmt.Errorf("Map result file s3://%s/%s: batch output: %w", bucket, f.Key, err)
			}
			outs = append(outs, out)
		}
	}
	return outs, nil
}

func logf(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
