package workflow

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/plan"
)

// finalizeSplit finalizes a split run: each archive's central directory
// sent and its upload completed with its CRC-32, one after another, then
// one report and one output listing them all. When an archive fails, the
// ones this run completed before it are deleted: a failed split run leaves
// none of its archives (Abort aborts the uploads left).
func (f *Finalizer) finalizeSplit(ctx context.Context, cfg Config, job *Job, p *plan.Plan, results []PartResult, started time.Time) (*FinalizeOutput, error) {
	byArchive := make([][]PartResult, len(p.Archives))
	for _, r := range results {
		if r.Archive < 0 || r.Archive >= len(p.Archives) {
			return nil, fmt.Errorf("a worker reports part %d of archive %d; the plan has %d archives", r.Part, r.Archive+1, len(p.Archives))
		}
		byArchive[r.Archive] = append(byArchive[r.Archive], r)
	}
	if !job.Overwrite {
		// The planner found the report's key free; another writer may have
		// taken it since. Fail now, while the uploads can still be aborted.
		if err := checkReportFree(ctx, f.S3, job.Destination); err != nil {
			return nil, err
		}
	}
	stats := ReportStats{Stats: p.Stats()}
	archives := make([]Archive, 0, len(p.Archives))
	for k := range p.Archives {
		a, st, err := f.finalizeArchive(ctx, cfg, job, p, k, byArchive[k])
		if err != nil {
			err = fmt.Errorf("archive %d of %d, %s: %w", k+1, len(p.Archives), ArchiveKey(job.Destination.Key, k), err)
			return nil, f.discard(ctx, job, archives, err)
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
func (f *Finalizer) finalizeArchive(ctx context.Context, cfg Config, job *Job, p *plan.Plan, k int, results []PartResult) (*Archive, ReportStats, error) {
	a := p.ArchivePlan(k)
	aj := job.forArchive(p.Archives[k].Upload)
	first := p.Archives[k].First
	for i := range results {
		// The workers number entries across the plan; a's from 0.
		results[i].CRCs = rebaseCRCs(results[i].CRCs, -int(first))
	}
	byPart, stats, err := mergeResults(a, results)
	if err != nil {
		return nil, stats, err
	}
	archiveCRC, completed, err := sendFinalParts(ctx, archiveUpload{c: f.S3, cfg: cfg, job: aj}, a, byPart, &stats)
	if err != nil {
		return nil, stats, err
	}
	etag := ""
	if !completed {
		if etag, err = f.complete(ctx, aj, a, byPart, archiveCRC); err != nil && !s3ref.IsCode(err, "NoSuchUpload") {
			return nil, stats, err
		}
	}
	out, err := f.check(ctx, aj, a, archiveCRC, etag)
	if err != nil {
		return nil, stats, err
	}
	out.Entries = len(a.Entries)
	return out, stats, nil
}

// rebaseCRCs moves CRC-32s keyed by entry index by delta.
func rebaseCRCs(crcs map[string]string, delta int) map[string]string {
	if len(crcs) == 0 || delta == 0 {
		return crcs
	}
	out := make(map[string]string, len(crcs))
	for k, v := range crcs {
		i, err := strconv.Atoi(k)
		if err != nil {
			out[k] = v // mergeResults says what is wrong with it
			continue
		}
		out[strconv.Itoa(i+delta)] = v
	}
	return out
}

// discard deletes the archives this run completed, when a later one
// failed: a split run leaves all of its archives or none. One that is no
// longer what this run wrote (another writer's since) is left alone.
func (f *Finalizer) discard(ctx context.Context, job *Job, done []Archive, cause error) error {
	ctx = context.WithoutCancel(ctx)
	d := job.Destination
	var left []string
	for k, a := range done {
		key := ArchiveKey(d.Key, k)
		h, err := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &key})
		if err != nil || aws.ToString(h.ETag) != a.ETag {
			continue
		}
		if _, err := f.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.Bucket, Key: &key}); err != nil {
			left = append(left, a.URI)
		}
	}
	if left != nil {
		return fmt.Errorf("%w; deleting the archives completed before it failed too, delete them yourself: %v", cause, left)
	}
	return cause
}
