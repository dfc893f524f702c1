package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// The states a kept extraction continues from are the jobs Map, or Finalize
// when every batch had succeeded.
const (
	stateRunJobs  = "RunJobs"
	stateFinalize = "Finalize"
)

// buildFailure is where build stopped, the state and, when the jobs Map
// ran, its children.
type buildFailure struct {
	state    string
	children []stepfn.ChildResult
	err      error
}

// ResumeStats counts what a resume did, the plan's objects, those already
// at the destination when it began, and the objects of the batches it ran
// again. Present of those were there already; a worker finds the ones its
// run wrote by their execution metadata and does not write them again.
type ResumeStats struct {
	Objects      int // the objects the plan writes
	Listed       int // of them, found at the destination when the resume began
	ObjectsRun   int // objects of the batches run again
	Present      int // of ObjectsRun, found at the destination when the resume began
	BatchesRun   int
	BatchesKept  int // batches that had succeeded and were not run again
	Redrives     int // this resume's number: 1 for the first
	FailedState  string
	FailureCause string
}

// Resumable reports whether a run that failed with err is kept for a
// resume when Request.Keep allows. Only a cause a retry may mend is.
func Resumable(err error) bool { return stepfn.Resumable(err, Retryable) }

// keepRun records a run that failed for a resume instead of aborting it and
// returns the failure as a stepfn.KeptError. It returns nil, and the caller
// aborts, when r.keep is 0, the cause is not resumable, or the record
// cannot be written.
func (r *runner) keepRun(ctx context.Context, ex *Extraction, f *buildFailure) error {
	if r.keep <= 0 || !Resumable(f.err) {
		return nil
	}
	now := time.Now().UTC()
	input, _ := json.Marshal(ex)
	k := &stepfn.Kept{Execution: ex.Execution, State: f.state, Input: input, Children: f.children,
		Error: ErrorType(f.err), Cause: f.err.Error(), Failed: now, Until: now.Add(r.keep), Redrives: r.redrives}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := stepfn.WriteKept(wctx, workPutter(r.c), ex.WorkBucket, ex.WorkPrefix, k); err != nil {
		return nil
	}
	return &stepfn.KeptError{Execution: ex.Execution, Until: k.Until, Err: f.err}
}

// ResumeRequest names a kept extraction and how long to keep it again.
type ResumeRequest struct {
	WorkBucket string
	WorkPrefix string // "" for the default, s3zip-work/
	Execution  string
	// Keep is how long the run is kept again if it fails again for a cause
	// a retry may mend; 0 aborts it.
	Keep time.Duration
}

// Resume continues the kept extraction req.Execution from the state that
// failed, as a redrive does. The jobs Map runs again only the batches that
// did not succeed, or whose objects are not all at the destination with the
// sizes their batch reported; then Finalize runs. A failure a retry may
// mend keeps the run again for another req.Keep; any other aborts it.
func Resume(ctx context.Context, c Client, req ResumeRequest, onProgress func(Progress)) (*Result, *ResumeStats, error) {
	r := &runner{c: c, log: slog.New(slog.DiscardHandler), onProgress: onProgress, keep: req.Keep}
	workBucket, workPrefix, execution := req.WorkBucket, req.WorkPrefix, req.Execution
	prefix := Config{WorkBucket: workBucket, WorkPrefix: workPrefix}.Defaults().ExecutionPrefix(execution)
	k, err := stepfn.ReadKept(ctx, workGetter(c), workBucket, prefix)
	if s3err.NotFound(err) {
		return nil, nil, fmt.Errorf("no kept extraction %s under s3://%s/%s: it completed, was aborted, or was removed after its keep time; extract the archive again", execution, workBucket, prefix)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("resume %s: %w", execution, err)
	}
	var ex Extraction
	if err := json.Unmarshal(k.Input, &ex); err != nil || ex.WorkPrefix != prefix {
		return nil, nil, fmt.Errorf("resume %s: the kept record s3://%s/%s%s does not hold this run's extraction", execution, workBucket, prefix, stepfn.KeptName)
	}
	cfg := Config{WorkBucket: ex.WorkBucket, WorkPrefix: workPrefix, BatchSize: ex.BatchSize, MaxConcurrency: ex.MaxConcurrency, Workers: 1}.Defaults()
	stats := &ResumeStats{Redrives: k.Redrives + 1, FailedState: k.State, FailureCause: k.Cause}
	r.redrives = stats.Redrives
	jobs, err := readJobs(ctx, c, &ex)
	if err != nil {
		return nil, stats, fmt.Errorf("resume %s: ItemReader: %w", execution, err)
	}
	listed, err := listSizes(ctx, c, ex.DestBucket, ex.Prefix)
	if err != nil {
		return nil, stats, fmt.Errorf("resume %s: %w", execution, err)
	}
	redrive := make([]stepfn.ChildResult, 0)
	if len(jobs) > 0 {
		batches, err := jobBatches(jobs, &ex)
		if err != nil {
			return nil, stats, fmt.Errorf("resume %s: %w", execution, err)
		}
		redrive = make([]stepfn.ChildResult, len(batches))
		for b, batch := range batches {
			items := 0
			for _, j := range batch.Items {
				for _, it := range j.Items {
					items++
					if _, ok := listed[it.Key]; ok {
						stats.Listed++
					}
				}
			}
			stats.Objects += items
			if b < len(k.Children) && k.Children[b].Status == stepfn.StatusSucceeded && childWritten(k.Children[b], listed) {
				redrive[b] = k.Children[b]
				stats.BatchesKept++
				continue
			}
			stats.BatchesRun++
			stats.ObjectsRun += items
			for _, j := range batch.Items {
				for _, it := range j.Items {
					if _, ok := listed[it.Key]; ok {
						stats.Present++
					}
				}
			}
		}
	}
	res, err := r.finish(ctx, cfg, &ex, redrive)
	return res, stats, err
}

// jobBatches cuts the jobs into the batches RunJobs runs, as the
// ItemBatcher does. The cut is the same for the same extraction, so a
// resume's batch b is the failed run's.
func jobBatches(jobs []Job, ex *Extraction) ([]BatchInput, error) {
	return stepfn.BatchItems(jobs, ex.BatchSize, func(items []Job) BatchInput {
		var bi BatchInput
		bi.Items, bi.BatchInput.Job = items, *ex
		return bi
	}, stateRunJobs)
}

// childWritten reports whether every object a succeeded batch reported is
// at the destination with the size it reported.
func childWritten(child stepfn.ChildResult, listed map[string]int64) bool {
	var out BatchOutput
	if err := json.Unmarshal([]byte(child.Output), &out); err != nil {
		return false
	}
	for _, w := range out.Written {
		if size, ok := listed[w.Key]; !ok || size != w.Size {
			return false
		}
	}
	return true
}

// listSizes lists the objects under prefix in bucket, by key.
func listSizes(ctx context.Context, c Client, bucket, prefix string) (map[string]int64, error) {
	sizes := map[string]int64{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, classifyS3(err))
		}
		for _, o := range page.Contents {
			sizes[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return sizes, nil
}
