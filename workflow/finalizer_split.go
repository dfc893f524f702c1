package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3x"
)

// finalizeSplit finalizes a split run: each archive's central directory
// sent and its upload completed with its CRC-32, one after another, then
// one report and one output listing them all. Each archive completed is
// recorded in the work prefix (doneKey): if the run fails after all (a
// later archive, a finalizer retried until the state machine gives up),
// Abort deletes them, so a failed split run leaves none of its archives.
// The finalizer does not: a retry of it carries on from them.
func (f *Finalizer) finalizeSplit(ctx context.Context, run *finalRun, results []PartResult, started time.Time) (*FinalizeOutput, error) {
	job, l := run.job, run.l
	byArchive := make([][]PartResult, len(l.Archives))
	for _, r := range results {
		if r.Archive < 0 || r.Archive >= len(l.Archives) {
			return nil, fmt.Errorf("a worker reports part %d of archive %d; the plan has %d archives", r.Part, r.Archive+1, len(l.Archives))
		}
		byArchive[r.Archive] = append(byArchive[r.Archive], r)
	}
	if run.checkReport && !f.completedBefore(ctx, job) {
		// The planner found the report's key free; another writer may have
		// taken it since. Fail now, while the uploads can still be aborted.
		if err := checkReportFree(ctx, f.S3, job.Destination); err != nil {
			return nil, err
		}
	}
	run.checkReport = false
	stats := ReportStats{Stats: l.Stats}
	archives := make([]Archive, 0, len(l.Archives))
	from := int64(0) // where archive k's entries start in the entries file
	for k, spec := range l.Archives {
		ar := archiveRun{layout: l.Archive(k), job: job.forArchive(spec.Upload), first: spec.First, from: from, number: k + 1, last: k == len(l.Archives)-1}
		a, st, next, err := f.finalizeArchive(ctx, run, ar, byArchive[k])
		if err != nil {
			return nil, fmt.Errorf("archive %d of %d, %s: %w", k+1, len(l.Archives), ArchiveKey(job.Destination.Key, k), err)
		}
		if err := writeJSON(ctx, f.S3, job.WorkBucket, doneKey(job.WorkPrefix, k), completedArchive{Key: ArchiveKey(job.Destination.Key, k), ETag: a.ETag, Size: a.Size}); err != nil {
			return nil, fmt.Errorf("archive %d of %d is complete, but recording it failed: %w", k+1, len(l.Archives), err)
		}
		a.Entries = spec.Entries
		archives = append(archives, *a)
		stats.StreamedBytesActual += st.StreamedBytesActual
		stats.CopiedBytesActual += st.CopiedBytesActual
		from = next
	}
	stats.FinalizeMillis = time.Since(started).Milliseconds()
	out := &FinalizeOutput{Archive: archives[0], Archives: archives, Stats: stats}
	f.report(ctx, run, &Report{Archive: archives[0], Archives: archives}, out, fmt.Sprintf("the %d archives are complete and checked, but their report", len(archives)))
	if err := cleanWork(ctx, f.S3, job); err != nil {
		return nil, fmt.Errorf("delete work prefix: %w", err)
	}
	f.describe(ctx, job, out, l.Strategy)
	f.logger().Info("archives complete", "execution", job.Execution, "archives", len(archives), "size", l.Size, "entries", l.Entries, "millis", stats.FinalizeMillis)
	return out, nil
}

// completedBefore says whether an earlier run of this finalizer completed
// the first archive (its done record): it checked the report's key then,
// and may have written the report since.
func (f *Finalizer) completedBefore(ctx context.Context, job *Job) bool {
	_, err := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &job.WorkBucket, Key: aws.String(doneKey(job.WorkPrefix, 0))})
	return err == nil
}

// completedArchive is the record of an archive the finalizer completes:
// written before the completion with the archive's size and CRC-32 (ETag
// empty), and, for a split run's, again after it with the ETag. An archive
// a failed run completed is then found by Abort (discardArchives) however
// the finalizer ended, even in the instant between the completion and its
// record.
type completedArchive struct {
	Key  string `json:"key"`
	ETag string `json:"etag,omitempty"`
	// Size and CRC32 (8 hex digits) are the archive's: with no ETag, the
	// object at Key is this run's if it has them (the completion stores the
	// CRC-32 as the object's full-object checksum).
	Size  int64  `json:"size,omitempty"`
	CRC32 string `json:"crc32,omitempty"`
}

// ours says whether the object h describes is the archive the record is
// of: the ETag it was completed with or, before that was recorded, its size
// and CRC-32. (With overwrite, an archive identical to the one the run
// would have written, byte for byte, is taken for it.)
func (c *completedArchive) ours(h *s3.HeadObjectOutput) bool {
	if c.ETag != "" {
		return aws.ToString(h.ETag) == c.ETag
	}
	crc, ok := fullObjectCRC(h)
	return ok && c.CRC32 != "" && fmt.Sprintf("%08x", crc) == c.CRC32 && aws.ToInt64(h.ContentLength) == c.Size
}

// recordCompleting records archive k (0 for a run of one archive) before
// its upload is completed: its key (the job's destination), size and
// CRC-32 (rec's).
func recordCompleting(ctx context.Context, c objectPutter, job *Job, k int, rec completedArchive) error {
	rec.Key = job.Destination.Key
	if err := writeJSON(ctx, c, job.WorkBucket, doneKey(job.WorkPrefix, k), rec); err != nil {
		return fmt.Errorf("recording the archive before completing it: %w", err)
	}
	return nil
}

// doneKey is where the finalizer records archive k of a split run as
// completed.
func doneKey(workPrefix string, k int) string {
	return fmt.Sprintf("%sdone/%04d.json", workPrefix, k+1)
}

// discardArchives deletes the archives of a failed run that its finalizer
// recorded as completed or completing (a split run's, or the one archive),
// each only while it is still the object this run completed (its ETag, or
// its size and CRC-32): another writer's since is left alone.
//
// Only archives whose upload was gone when Abort came (gone, by index) are
// looked for: one whose upload Abort aborted was never completed, and a HEAD
// of a missing key needs s3:ListBucket.
func discardArchives(ctx context.Context, c archiveDiscarder, rec *uploadRecord, gone map[int]bool) (int, error) {
	bucket, workBucket, workPrefix := rec.Destination.Bucket, rec.WorkBucket, rec.WorkPrefix
	deleted := 0
	archives := len(rec.Archives)
	if archives == 0 && rec.UploadID != "" {
		archives = 1
	}
	for k := range archives {
		if !gone[k] {
			continue
		}
		doc, err := getBytes(ctx, c, workBucket, doneKey(workPrefix, k), 1<<20)
		if s3x.NotFound(err) {
			continue
		}
		var done completedArchive
		if err == nil {
			err = json.Unmarshal(doc, &done)
		}
		if err != nil {
			return deleted, fmt.Errorf("the record of archive %d: %w", k+1, err)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &done.Key, ChecksumMode: types.ChecksumModeEnabled})
		if s3x.NotFound(err) || err == nil && !done.ours(h) {
			continue
		}
		if err != nil {
			return deleted, s3Error("HeadObject", bucket, done.Key, false, err)
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &done.Key}); err != nil {
			return deleted, s3Error("DeleteObject", bucket, done.Key, false, err)
		}
		deleted++
	}
	return deleted, nil
}

// archiveDiscarder is what discarding a failed split run's archives needs.
type archiveDiscarder interface {
	objectGetter
	objectHeader
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}
