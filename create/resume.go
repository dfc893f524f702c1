package create

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// The states a kept run continues from are the parts Map, or the finalizer
// when every batch had succeeded.
const (
	stateBuildParts      = "BuildParts"
	stateFinalizeArchive = "FinalizeArchive"
)

// ResumeStats counts what a resume built. It counts the parts of the
// batches it ran again, those of them the upload already had and so built
// twice, and the parts the upload held when the resume began.
type ResumeStats struct {
	Parts        int // the archive's parts built by workers, the plan's part jobs and the parts they carry
	Listed       int // parts ListParts found in the upload when the resume began
	Built        int // parts the resume's batches built
	Rebuilt      int // parts of Built that ListParts had found, so built twice
	BatchesRun   int
	BatchesKept  int // batches that had succeeded and were not run again
	MostPerBatch int // the most parts one batch builds
	Redrives     int // this resume's number, 1 for the first
	FailedState  string
	FailureCause string
}

// Resumable reports whether a run that failed with err is kept for a
// resume, when Runner.Keep allows. Only a cause a retry may mend is.
func Resumable(err error) bool { return stepfn.Resumable(err, Retryable) }

// keep records a run that failed in state for a resume instead of aborting
// it, and returns the failure as a stepfn.KeptError. It returns nil, and the
// caller aborts, when Keep is 0, the cause is not resumable, or the record
// cannot be written.
func (r *Runner) keep(ctx context.Context, job *Job, f *buildFailure, redrives int) error {
	if r.Keep <= 0 || f == nil || !Resumable(f.err) {
		return nil
	}
	now := time.Now().UTC()
	input, _ := json.Marshal(job)
	k := &stepfn.Kept{Execution: job.Execution, State: f.state, Input: input, Children: f.children,
		Error: ErrorType(f.err), Cause: f.err.Error(), Failed: now, Until: now.Add(r.Keep), Redrives: redrives}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := stepfn.WriteKept(wctx, putter(r.S3), job.WorkBucket, job.WorkPrefix, k); err != nil {
		return nil
	}
	return &stepfn.KeptError{Execution: job.Execution, Until: k.Until, Err: f.err}
}

// buildFailure says where build stopped, with the state and, when the parts
// Map ran, its children.
type buildFailure struct {
	state    string
	children []stepfn.ChildResult
	err      error
}

// Resume continues the kept run execution from the state that failed, as a
// redrive does. The parts Map runs again only the batches that did not
// succeed, or whose parts ListParts does not show in the upload with the
// ETag their batch reported, and then the finalizer runs. A failure a retry
// may mend keeps the run again for Keep from now, and any other aborts it.
func (r *Runner) Resume(ctx context.Context, execution string) (*RunResult, *ResumeStats, error) {
	cfg := r.Config.Defaults()
	log := logger(r.Log)
	prefix := cfg.workPrefix(execution)
	k, err := stepfn.ReadKept(ctx, func(ctx context.Context, bucket, key string, limit int64) ([]byte, error) {
		return getBytes(ctx, r.S3, bucket, key, limit)
	}, cfg.WorkBucket, prefix)
	if s3err.NotFound(err) {
		return nil, nil, fmt.Errorf("no kept run %s under s3://%s/%s: it completed, was aborted, or was removed after its keep time; create the archive again", execution, cfg.WorkBucket, prefix)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("resume %s: %w", execution, err)
	}
	var job Job
	if err := json.Unmarshal(k.Input, &job); err != nil || job.WorkPrefix != prefix {
		return nil, nil, fmt.Errorf("resume %s: the kept record s3://%s/%s%s does not hold this run's job", execution, cfg.WorkBucket, prefix, stepfn.KeptName)
	}
	stats := &ResumeStats{Redrives: k.Redrives + 1, FailedState: k.State, FailureCause: k.Cause}
	items, batches, err := r.partBatches(ctx, &job)
	if err != nil {
		return nil, stats, fmt.Errorf("resume %s: %w", execution, err)
	}
	listed, err := listUploads(ctx, r.S3, &job, items)
	if err != nil {
		// An upload S3 does not know cannot be continued, so what is left
		// is removed, as a run that cannot heal is.
		state, _ := json.Marshal(job)
		return nil, stats, r.abort(ctx, state, execution, fmt.Errorf("resume %s: %w", execution, err))
	}
	stats.Listed = len(listed)
	redrive := make([]stepfn.ChildResult, len(batches))
	for b := range batches {
		if b < len(k.Children) && k.Children[b].Status == stepfn.StatusSucceeded && childBuilt(k.Children[b], listed) {
			redrive[b] = k.Children[b]
			stats.BatchesKept++
			continue
		}
		stats.BatchesRun++
		for _, it := range batches[b].Items {
			for _, p := range append([]plan.PartJob{it}, it.Carried...) {
				stats.Built++
				if _, ok := listed[partKey(p.Archive, p.Number)]; ok {
					stats.Rebuilt++
				}
			}
		}
	}
	for _, it := range items {
		stats.Parts += 1 + len(it.Carried)
	}
	for _, b := range batches {
		n := 0
		for _, it := range b.Items {
			n += 1 + len(it.Carried)
		}
		stats.MostPerBatch = max(stats.MostPerBatch, n)
	}
	log.Info("resuming", "execution", execution, "state", k.State, "batchesRun", stats.BatchesRun, "batchesKept", stats.BatchesKept, "partsListed", stats.Listed)
	out, failure := r.build(ctx, cfg, log, &job, redrive)
	if failure != nil {
		if kept := r.keep(ctx, &job, failure, stats.Redrives); kept != nil {
			return &RunResult{Job: &job}, stats, kept
		}
		state, _ := json.Marshal(job)
		return &RunResult{Job: &job}, stats, r.abort(ctx, state, execution, failure.err)
	}
	return &RunResult{Job: &job, Output: out}, stats, nil
}

// partBatches reads the job's part jobs as the ItemReader does and cuts them
// into the batches BuildParts runs, as the ItemBatcher does. The cut is the
// same for the same job, so a resume's batch b is the failed run's.
func (r *Runner) partBatches(ctx context.Context, job *Job) ([]plan.PartJob, []BatchInput, error) {
	doc, err := getBytes(ctx, r.S3, job.WorkBucket, job.PartsKey, 1<<30)
	if err != nil {
		return nil, nil, fmt.Errorf("ItemReader: %w", err)
	}
	items, err := plan.DecodeParts(bytes.NewReader(doc))
	if err != nil {
		return nil, nil, fmt.Errorf("ItemReader: %w", err)
	}
	batches, err := stepfn.BatchItems(items, job.PartsPerBatch, func(items []plan.PartJob) BatchInput {
		var in BatchInput
		in.Items, in.BatchInput.Job = items, *job
		return in
	}, "BuildParts")
	return items, batches, err
}

// childBuilt reports whether every part a succeeded batch reported is in
// the upload, with the ETag the batch reported.
func childBuilt(child stepfn.ChildResult, listed map[string]string) bool {
	var out BatchResult
	if err := json.Unmarshal([]byte(child.Output), &out); err != nil {
		return false
	}
	for _, p := range out.Parts {
		if etag, ok := listed[partKey(p.Archive, p.Part)]; !ok || etag != strings.Trim(p.ETag, `"`) {
			return false
		}
	}
	return true
}

// listUploads lists the parts of the run's upload, or of each archive's in a
// split run, and returns their ETags by partKey.
func listUploads(ctx context.Context, c s3.ListPartsAPIClient, job *Job, items []plan.PartJob) (map[string]string, error) {
	type upload struct {
		archive int
		key, id string
	}
	uploads := []upload{{0, job.Destination.Key, job.UploadID}}
	if job.Archives > 0 {
		uploads = nil
		seen := map[string]bool{}
		for _, it := range items {
			if it.Upload != nil && !seen[it.Upload.UploadID] {
				seen[it.Upload.UploadID] = true
				uploads = append(uploads, upload{it.Archive, it.Upload.Key, it.Upload.UploadID})
			}
		}
	}
	listed := map[string]string{}
	bucket := job.Destination.Bucket
	for _, u := range uploads {
		if u.id == "" {
			continue
		}
		p := s3.NewListPartsPaginator(c, &s3.ListPartsInput{Bucket: &bucket, Key: aws.String(u.key), UploadId: aws.String(u.id)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if s3err.NotFound(err) {
				return nil, fmt.Errorf("the multipart upload %s of s3://%s/%s is gone (aborted, or removed by the bucket's lifecycle rule): the run cannot be continued; create the archive again", u.id, bucket, u.key)
			}
			if err != nil {
				return nil, s3Error("ListParts", bucket, u.key, false, err)
			}
			for _, part := range page.Parts {
				listed[partKey(u.archive, int(aws.ToInt32(part.PartNumber)))] = strings.Trim(aws.ToString(part.ETag), `"`)
			}
		}
	}
	return listed, nil
}
