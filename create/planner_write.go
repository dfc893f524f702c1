package create

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/plan"
)

// planFiles returns the job of an execution's plan files, before writePlan
// writes them and before the upload is created and sets UploadID.
func (pl *Planner) planFiles(cfg Config, req *Request, execution string) *Job {
	prefix := cfg.workPrefix(execution)
	return &Job{
		Execution: execution, WorkBucket: cfg.WorkBucket, WorkPrefix: prefix,
		PlanKey: prefix + "plan.json", EntriesKey: prefix + "entries.jsonl", PartsKey: prefix + "parts.jsonl",
		Destination: req.Destination, MaxConcurrency: maxConcurrency(cfg, req), PartsPerBatch: cfg.PartsPerBatch, Overwrite: req.Options.Overwrite,
	}
}

// writePlan writes the plan, its entries, its part jobs and, for chains, the
// pad they start from to the job's work prefix.
func (pl *Planner) writePlan(ctx context.Context, p *plan.Plan, job *Job) error {
	files, err := spoolPlan(p)
	if err != nil {
		return err
	}
	defer files.remove()
	job.WorkerParts = files.jobs
	// The Map runs the plan as it was cut and priced for its workers.
	job.MaxConcurrency, job.PartsPerBatch, job.PartsInFlight = p.Fit.Workers, p.Fit.PartsPerBatch, p.Fit.InFlight
	objects := map[string]io.ReadSeeker{job.PlanKey: bytes.NewReader(files.header), job.EntriesKey: files.entries, job.PartsKey: files.parts}
	if p.Stats().ChainParts > 0 {
		job.PadKey = job.WorkPrefix + "pad"
		objects[job.PadKey] = bytes.NewReader(make([]byte, partwork.PadSize))
	}
	for key, body := range objects {
		size, err := body.Seek(0, io.SeekEnd)
		if err == nil {
			_, err = body.Seek(0, io.SeekStart)
		}
		if err != nil {
			return fmt.Errorf("plan file for %s: %w", key, err)
		}
		// No checksum is stored, whatever the client's default, because
		// chains copy ranges of the pad, as partwork.ChainChecksums says.
		plain := func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }
		if _, err := pl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &job.WorkBucket, Key: aws.String(key), Body: body, ContentLength: aws.Int64(size)}, plain); err != nil {
			return s3Error("PutObject", job.WorkBucket, key, false, err)
		}
	}
	return nil
}

// readPlan reads a job's plan back, as the planner does after a CRC round.
// The entries file is decoded as it arrives, not held whole first, because
// at ten million entries it is gigabytes. The finalizer holds no plan and
// uses readLayout and streamEntries instead.
func readPlan(ctx context.Context, c S3, job *Job) (*plan.Plan, error) {
	header, err := getBytes(ctx, c, job.WorkBucket, job.PlanKey, 64<<20)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	entries, err := openObject(ctx, c, job.WorkBucket, job.EntriesKey)
	if err != nil {
		return nil, fmt.Errorf("plan entries: %w", err)
	}
	defer entries.Close()
	parts, err := getBytes(ctx, c, job.WorkBucket, job.PartsKey, 1<<30)
	if err != nil {
		return nil, fmt.Errorf("plan parts: %w", err)
	}
	return plan.Decode(header, entries, bytes.NewReader(parts))
}

// spooledPlan holds a plan's header and its entries and part-job files,
// written to the temp directory as they are made. On Lambda that is /tmp,
// whose size infra sets, as infra/README.md says. The entries file of ten
// million entries is gigabytes, most of the planner's memory if held there.
type spooledPlan struct {
	header         []byte
	entries, parts *os.File
	jobs           int
}

// spoolPlan writes p's files to the temp directory.
func spoolPlan(p *plan.Plan) (*spooledPlan, error) {
	f := &spooledPlan{}
	var err error
	if f.entries, err = os.CreateTemp("", "s3zip-entries-*.jsonl"); err != nil {
		return nil, fmt.Errorf("plan entries file: %w (the planner writes it to $TMPDIR, /tmp on Lambda)", err)
	}
	if f.parts, err = os.CreateTemp("", "s3zip-parts-*.jsonl"); err != nil {
		f.remove()
		return nil, fmt.Errorf("plan part-job file: %w (the planner writes it to $TMPDIR, /tmp on Lambda)", err)
	}
	if f.header, f.jobs, err = p.EncodeTo(f.entries, f.parts); err != nil {
		f.remove()
		return nil, fmt.Errorf("write the plan to %s: %w (the planner's /tmp must hold the entries file: infra/README.md)", os.TempDir(), err)
	}
	return f, nil
}

// remove closes and deletes the files.
func (f *spooledPlan) remove() {
	discardSpool(f.entries)
	discardSpool(f.parts)
}

// uploadRecordKey is where a planner records the upload it created, so that
// a planner run again for the same execution can abort it.
func (j *Job) uploadRecordKey() string { return j.WorkPrefix + "upload.json" }

// abortEarlierAttempt aborts the upload an earlier attempt at the same
// execution created, which nothing else would ever complete or abort. The
// planner runs again when its Lambda is retried after creating an upload.
func (pl *Planner) abortEarlierAttempt(ctx context.Context, job *Job) error {
	earlier, err := readUploadRecord(ctx, pl.S3, job.WorkBucket, job.WorkPrefix)
	if err != nil || earlier == nil {
		return err
	}
	d := earlier.Destination
	if err := abortArchives(ctx, pl.S3, d.Bucket, earlier.Archives); err != nil {
		return err
	}
	if earlier.UploadID == "" {
		return nil
	}
	if _, err := pl.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &earlier.UploadID}); err != nil && !s3err.NotFound(err) {
		return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
	}
	return nil
}

// startUploads creates the archive's upload, or the uploads of a split
// plan's archives.
func (pl *Planner) startUploads(ctx context.Context, cfg Config, req *Request, job *Job, p *plan.Plan) error {
	defaultSSE(cfg, req)
	if p.Split() {
		return pl.startArchiveUploads(ctx, cfg, req, job, p)
	}
	return pl.startUpload(ctx, req, job)
}

// defaultSSE gives a request that names no encryption the deployment's
// destination KMS key, when it has one.
func defaultSSE(cfg Config, req *Request) {
	if req.Options.SSE == nil && cfg.DestinationKMSKeyID != "" {
		req.Options.SSE = &SSE{Type: "aws:kms", KMSKeyID: cfg.DestinationKMSKeyID}
	}
}

// RestartUpload starts the archive's upload again after S3 ended it with an
// UploadRestartError. It checks the request again, including that its key is
// still free unless it overwrites, aborts the ended upload, which S3 may have
// dropped already, and creates and records a new one for Abort to find. The
// job comes back with one more restart and its plan unchanged, so every part
// is built anew. Past maxUploadRestarts, or for a split run, it fails with
// UploadRestartError, for Abort.
func (pl *Planner) RestartUpload(ctx context.Context, in PlanInput, job *Job) (*Job, error) {
	if job.Restarts >= maxUploadRestarts {
		return nil, &UploadRestartError{Destination: job.Destination.URI(), Err: fmt.Errorf("the upload was started again %d times, and S3 ended each at its completion", job.Restarts)}
	}
	if job.Archives > 0 {
		return nil, &UploadRestartError{Destination: job.Destination.URI(), Err: fmt.Errorf("a split run's archives are not started again one by one: run the request again")}
	}
	cfg := pl.Config.Defaults()
	req, err := pl.begin(ctx, cfg, in)
	if err != nil {
		return nil, err
	}
	d := job.Destination
	if _, err := pl.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID}); err != nil && !s3err.NotFound(err) {
		return nil, s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
	}
	next := *job
	next.Restarts++
	defaultSSE(cfg, req)
	if err := pl.startUpload(ctx, req, &next); err != nil {
		return nil, err
	}
	return &next, nil
}

// startUpload creates the archive's multipart upload and records it.
func (pl *Planner) startUpload(ctx context.Context, req *Request, job *Job) error {
	var err error
	if job.UploadID, err = pl.createUpload(ctx, req); err != nil {
		return err
	}
	key := job.uploadRecordKey()
	doc, _ := json.Marshal(job)
	if _, err := pl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &job.WorkBucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))}); err != nil {
		// Nothing records the upload yet, so abort it here or it is lost.
		d := job.Destination
		_, _ = pl.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		return s3Error("PutObject", job.WorkBucket, key, false, err)
	}
	return nil
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
	// attempt at a time. Before each retry, and after a success or a final
	// failure if a clean-up did not go through, it aborts the uploads of this
	// key begun since its first attempt, except the one it keeps.
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

// createRetry retries CreateMultipartUpload, waiting 100 ms × attempt².
// cleanRetry retries at once, whatever failed, the clean-up of the uploads
// its failed attempts may have left.
var (
	createRetry = s3err.Retry{Attempts: 5, Backoff: s3err.Squared(100 * time.Millisecond)}
	cleanRetry  = s3err.Retry{Attempts: 3, Retryable: func(error) bool { return true }}
)

// createSkew allows for the server's clock being behind ours.
const createSkew = 5 * time.Second

// abortStrays aborts the uploads of exactly d's key initiated since since,
// except keep.
func abortStrays(ctx context.Context, c S3, d Destination, since time.Time, keep string) error {
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &d.Bucket, Prefix: &d.Key})
	if err != nil {
		return s3Error("ListMultipartUploads", d.Bucket, d.Key, false, err)
	}
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) != d.Key || aws.ToTime(u.Initiated).Before(since) || aws.ToString(u.UploadId) == keep {
			continue
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: u.UploadId}); err != nil && !s3err.NotFound(err) {
			return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
		}
	}
	return nil
}
