package create

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// finalizeSplit finalizes a split run. It sends each archive's central
// directory and completes its upload with its CRC-32, one archive after
// another, then writes one report and one output listing them all. Each
// archive completed is recorded at its doneKey in the work prefix. If the
// run fails after all, on a later archive or a finalizer retried until the
// state machine gives up, Abort deletes them, so a failed split run leaves
// none of its archives. The finalizer does not, and a retry of it carries
// on from them.
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
		// The planner found the report's key free, but another writer may
		// have taken it since. Fail now, while the uploads can still be aborted.
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
	logger(f.Log).Info("archives complete", "execution", job.Execution, "archives", len(archives), "size", l.Size, "entries", l.Entries, "millis", stats.FinalizeMillis)
	return out, nil
}

// completedBefore says whether the done record of an earlier run of this
// finalizer shows it completed the first archive. That run checked the
// report's key then, and may have written the report since.
func (f *Finalizer) completedBefore(ctx context.Context, job *Job) bool {
	_, err := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &job.WorkBucket, Key: aws.String(doneKey(job.WorkPrefix, 0))})
	return err == nil
}

// recordCompleting records archive k, 0 for a run of one archive, before
// its upload is completed. The record holds the job's destination key and
// rec's size and CRC-32.
func recordCompleting(ctx context.Context, c S3, job *Job, k int, rec completedArchive) error {
	rec.Key = job.Destination.Key
	if err := writeJSON(ctx, c, job.WorkBucket, doneKey(job.WorkPrefix, k), rec); err != nil {
		return fmt.Errorf("recording the archive before completing it: %w", err)
	}
	return nil
}
