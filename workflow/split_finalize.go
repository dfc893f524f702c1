package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/plan"
)

// finalizeSplit finalizes a split run: each archive's central directory
// sent and its upload completed with its CRC-32, one after another, then
// one report and one output listing them all. Each archive completed is
// recorded in the work prefix (doneKey): if the run fails after all (a
// later archive, a finalizer retried until the state machine gives up),
// Abort deletes them, so a failed split run leaves none of its archives.
// The finalizer does not: a retry of it carries on from them.
func (f *Finalizer) finalizeSplit(ctx context.Context, run splitFinal, results []PartResult, crcs *plan.CRCs, started time.Time) (*FinalizeOutput, error) {
	job, p := run.job, run.p
	byArchive := make([][]PartResult, len(p.Archives))
	for _, r := range results {
		if r.Archive < 0 || r.Archive >= len(p.Archives) {
			return nil, fmt.Errorf("a worker reports part %d of archive %d; the plan has %d archives", r.Part, r.Archive+1, len(p.Archives))
		}
		byArchive[r.Archive] = append(byArchive[r.Archive], r)
	}
	if !job.Overwrite && !f.completedBefore(ctx, job) {
		// The planner found the report's key free; another writer may have
		// taken it since. Fail now, while the uploads can still be aborted.
		if err := checkReportFree(ctx, f.S3, job.Destination); err != nil {
			return nil, err
		}
	}
	stats := ReportStats{Stats: p.Stats()}
	archives := make([]Archive, 0, len(p.Archives))
	for k := range p.Archives {
		a, st, err := f.finalizeArchive(ctx, run, k, byArchive[k], crcs)
		if err != nil {
			return nil, fmt.Errorf("archive %d of %d, %s: %w", k+1, len(p.Archives), ArchiveKey(job.Destination.Key, k), err)
		}
		if err := writeJSON(ctx, f.S3, job.WorkBucket, doneKey(job.WorkPrefix, k), completedArchive{Key: ArchiveKey(job.Destination.Key, k), ETag: a.ETag}); err != nil {
			return nil, fmt.Errorf("archive %d of %d is complete, but recording it failed: %w", k+1, len(p.Archives), err)
		}
		archives = append(archives, *a)
		stats.StreamedBytesActual += st.StreamedBytesActual
		stats.CopiedBytesActual += st.CopiedBytesActual
	}
	stats.FinalizeMillis = time.Since(started).Milliseconds()
	d := job.Destination
	out := &FinalizeOutput{Archive: archives[0], Archives: archives, Report: "s3://" + d.Bucket + "/" + ReportKey(d), Stats: stats}
	if err := f.writeReport(ctx, job, p, archives, stats); err != nil {
		f.logger().Warn("report not written", "execution", job.Execution, "report", out.Report, "error", err.Error())
		out.Warnings = append(out.Warnings, fmt.Sprintf("the %d archives are complete and checked, but their report %s was not written: %v", len(archives), out.Report, err))
		out.Report = ""
	}
	if err := cleanWork(ctx, f.S3, job); err != nil {
		return nil, fmt.Errorf("delete work prefix: %w", err)
	}
	f.describe(ctx, job, out, p.Strategy)
	f.logger().Info("archives complete", "execution", job.Execution, "archives", len(archives), "size", p.Size, "entries", len(p.Entries), "millis", stats.FinalizeMillis)
	return out, nil
}

// finalizeArchive finalizes archive k of a split plan as Finalize does one
// archive: its workers' parts checked, its final parts sent, its upload
// completed and the result checked.
func (f *Finalizer) finalizeArchive(ctx context.Context, run splitFinal, k int, results []PartResult, crcs *plan.CRCs) (*Archive, ReportStats, error) {
	cfg, job, p := run.cfg, run.job, run.p
	a := p.ArchivePlan(k)
	aj := job.forArchive(p.Archives[k].Upload)
	byPart, stats, err := mergeResults(a.WorkerParts(), a.Stats(), results)
	if err != nil {
		return nil, stats, err
	}
	dir, err := newDirectorySpool(a.DirectoryLayout(), a.FinalParts())
	if err != nil {
		return nil, stats, err
	}
	defer dir.discard()
	first := p.Archives[k].First
	for i := range a.Entries {
		// The workers number entries across the plan; a's from 0. Its
		// entries share the plan's (the report's).
		e := &a.Entries[i]
		if err := takeCRC(e, crcs.Get(first+e.Index)); err != nil {
			return nil, stats, err
		}
		if _, err := dir.add(e); err != nil {
			return nil, stats, err
		}
	}
	archiveCRC, completed, err := sendFinalParts(ctx, archiveUpload{c: f.S3, cfg: cfg, job: aj}, dir, byPart, &stats)
	if err != nil {
		return nil, stats, err
	}
	etag := ""
	if !completed {
		if etag, err = f.complete(ctx, aj, a.Size, byPart, archiveCRC); err != nil && !s3ref.IsCode(err, "NoSuchUpload") {
			return nil, stats, err
		}
	}
	out, err := f.check(ctx, aj, a.Size, archiveCRC, etag)
	if err != nil {
		return nil, stats, err
	}
	out.Entries = len(a.Entries)
	return out, stats, nil
}

// completedBefore says whether an earlier run of this finalizer completed
// the first archive (its done record): it checked the report's key then,
// and may have written the report since.
func (f *Finalizer) completedBefore(ctx context.Context, job *Job) bool {
	_, err := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &job.WorkBucket, Key: aws.String(doneKey(job.WorkPrefix, 0))})
	return err == nil
}

// splitFinal is what finalizing every archive of a split run shares.
type splitFinal struct {
	cfg Config
	job *Job
	p   *plan.Plan
}

// completedArchive is the record of an archive a split run completed.
type completedArchive struct {
	Key  string `json:"key"`
	ETag string `json:"etag"`
}

// doneKey is where the finalizer records archive k of a split run as
// completed.
func doneKey(workPrefix string, k int) string {
	return fmt.Sprintf("%sdone/%04d.json", workPrefix, k+1)
}

// discardArchives deletes the archives of a failed split run that its
// finalizer recorded as completed, each only while it is still the object
// this run completed (its ETag): another writer's since is left alone.
func discardArchives(ctx context.Context, c archiveDiscarder, rec *uploadRecord) (int, error) {
	bucket, workBucket, workPrefix := rec.Destination.Bucket, rec.WorkBucket, rec.WorkPrefix
	deleted := 0
	for k := range rec.Archives {
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
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &done.Key})
		if s3x.NotFound(err) || err == nil && aws.ToString(h.ETag) != done.ETag {
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
