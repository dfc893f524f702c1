package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// Request is one extraction.
type Request struct {
	Bucket, Key string // the archive
	DestBucket  string
	Prefix      string // ends in "/" or is empty
	Overwrite   bool
	Workers     int // jobs run at once, 8 by default
	// WorkBucket holds the jobs and results while the run lasts, under
	// WorkPrefix. They default to DestBucket and s3zip-work/.
	WorkBucket, WorkPrefix string
	Execution              string // names the run, cli-<time> by default
	// Keep is how long a run that fails running its jobs or finalizing, for
	// a cause a retry may mend, keeps what it wrote and its work objects for
	// Resume instead of aborting; 0 aborts every failed run.
	Keep time.Duration
	Options
}

// Progress is how far a run is, in archive bytes.
type Progress struct {
	Jobs, JobsDone   int
	Bytes, BytesDone int64
	// Writes and WriteSeconds are the Extraction's count of the requests
	// S3 counts against the destination prefix's write rate, and the least
	// time that rate allows them.
	Writes       int
	WriteSeconds float64
}

// Run extracts the archive the way the state machine does, with the same
// handlers in process. It runs Plan, then the jobs in batches, at most
// req.Workers jobs at once and retried like the Map's Retry, writing the
// batch outputs in the ResultWriter's layout, then Finalize. On any failure
// or interrupt Abort aborts every upload it began and deletes every object
// it wrote.
func Run(ctx context.Context, c Client, req Request, onProgress func(Progress)) (*Result, error) {
	r := &runner{c: c, log: slog.New(slog.DiscardHandler), onProgress: onProgress, keep: req.Keep}
	return r.run(ctx, req)
}

type runner struct {
	c          Client
	log        *slog.Logger
	onProgress func(Progress)
	// keep is how long a run that fails for a cause a retry may mend is
	// kept for Resume, 0 to abort it; redrives counts the resumes before this one.
	keep     time.Duration
	redrives int
}

// localBatchSize is how many jobs one in-process batch runs, one at a
// time, so req.Workers batches at once are req.Workers jobs.
const localBatchSize = 2

func (r *runner) run(ctx context.Context, req Request) (*Result, error) {
	if req.Workers <= 0 {
		req.Workers = 8
	}
	if req.Prefix != "" && req.Prefix[len(req.Prefix)-1] != '/' {
		req.Prefix += "/"
	}
	if req.WorkBucket == "" {
		req.WorkBucket = req.DestBucket
	}
	if req.Execution == "" {
		req.Execution = fmt.Sprintf("cli-%d", time.Now().UnixNano())
	}
	cfg := Config{WorkBucket: req.WorkBucket, WorkPrefix: req.WorkPrefix, BatchSize: localBatchSize, MaxConcurrency: req.Workers, Workers: 1, Model: req.Model}.Defaults()
	var doc RequestDoc
	doc.Archive.Bucket, doc.Archive.Key = req.Bucket, req.Key
	doc.Destination = &struct {
		Bucket string `json:"bucket"`
		Prefix string `json:"prefix"`
	}{req.DestBucket, req.Prefix}
	doc.Options.Overwrite, doc.Options.SkipUnsupported = req.Overwrite, req.SkipUnsupported
	doc.Options.SmallStored, doc.Options.ReadGroup, doc.Options.CopyPart = req.SmallStored, req.ReadGroup, req.CopyPart
	doc.Options.ContentTypes = req.ContentTypes.Override
	raw, _ := json.Marshal(doc)

	planner := &Planner{S3: r.c, Config: cfg, Log: r.log}
	ex, err := planner.Handle(ctx, PlanInput{Request: raw, Execution: req.Execution})
	if err != nil {
		if plannedNothing(err) {
			return nil, err
		}
		return nil, r.abort(ctx, cfg, raw, req.Execution, err)
	}
	return r.finish(ctx, cfg, ex, nil)
}

// finish runs the jobs redrive does not hold as succeeded and Finalize,
// then keeps the run for a resume, or aborts it, when that fails.
func (r *runner) finish(ctx context.Context, cfg Config, ex *Extraction, redrive []stepfn.ChildResult) (*Result, error) {
	res, f := r.build(ctx, cfg, ex, redrive)
	if f == nil && ctx.Err() != nil {
		f = &buildFailure{state: stateFinalize, err: ctx.Err()} // an interrupted run is undone even if every job finished
	}
	if f != nil {
		if kept := r.keepRun(ctx, ex, f); kept != nil {
			return nil, kept
		}
		state, _ := json.Marshal(ex)
		return nil, r.abort(ctx, cfg, state, ex.Execution, f.err)
	}
	return res, nil
}

// plannedNothing says the planner refused before writing anything.
func plannedNothing(err error) bool {
	var re *failure.RequestError
	var rfe *EntriesRefusedError
	var ee *failure.DestinationExistsError
	return errors.As(err, &re) || errors.As(err, &rfe) || errors.As(err, &ee)
}

// build runs RunJobs and Finalize. redrive, when set, holds the jobs Map's
// children of a failed run for stepfn.Map.Redrive. A failure says where
// build stopped.
func (r *runner) build(ctx context.Context, cfg Config, ex *Extraction, redrive []stepfn.ChildResult) (*Result, *buildFailure) {
	// ItemReader
	jobs, err := readJobs(ctx, r.c, ex)
	if err != nil {
		return nil, &buildFailure{state: stateRunJobs, err: fmt.Errorf("ItemReader: %w", err)}
	}
	var total int64
	for i := range jobs {
		total += jobs[i].Bytes()
	}
	var jobsDone atomic.Int32
	var bytesDone atomic.Int64
	report := func() {
		if r.onProgress != nil {
			r.onProgress(Progress{Jobs: len(jobs), JobsDone: int(jobsDone.Load()), Bytes: total, BytesDone: bytesDone.Load(), Writes: ex.Writes, WriteSeconds: ex.WriteSeconds})
		}
	}
	report()
	in := FinalizeInput{Extraction: *ex}
	var children []stepfn.ChildResult
	if len(jobs) > 0 {
		// ItemReader, ItemBatcher, MaxConcurrency, Retry, ResultWriter.
		batches, err := jobBatches(jobs, ex)
		if err != nil {
			return nil, &buildFailure{state: stateRunJobs, err: err}
		}
		w := &Worker{S3: r.c, Config: cfg, Log: r.log}
		m := stepfn.Map{State: stateRunJobs, MaxConcurrency: ex.MaxConcurrency, Retry: stepfn.Retry{Retryable: Retryable}, Redrive: redrive, Done: func(b int) {
			for _, j := range batches[b].Items {
				bytesDone.Add(j.Bytes())
			}
			jobsDone.Add(int32(len(batches[b].Items)))
			report()
		}}
		if children, err = stepfn.RunMap(ctx, m, batches, w.Handle); err != nil {
			return nil, &buildFailure{state: stateRunJobs, children: children, err: err}
		}
		if in.Results, err = stepfn.WriteLocalResults(ctx, workPutter(r.c), ex.WorkBucket, ex.WorkPrefix+"map/", children); err != nil {
			return nil, &buildFailure{state: stateRunJobs, children: children, err: err}
		}
	}
	failed := func(err error) *buildFailure {
		return &buildFailure{state: stateFinalize, children: children, err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, failed(err)
	}
	f := &Finalizer{S3: r.c, Config: cfg, Log: r.log}
	var res *Result
	err = stepfn.Retry{Retryable: Retryable}.Do(ctx, "Finalize", func() error {
		var err error
		res, err = f.finalize(ctx, in)
		return err
	})
	if err != nil {
		return nil, failed(err)
	}
	res.Plan = &Plan{Jobs: jobs, Skipped: res.Skipped, Objects: ex.Objects, Bytes: ex.Bytes, Copied: ex.Copied, Read: ex.Read, ReadBelow: ex.ReadBelow, ReadAll: ex.ReadAll}
	return res, nil
}

// abort runs the Abort handler, retried and not cancelled with the run, and
// returns the original error.
func (r *runner) abort(ctx context.Context, cfg Config, state json.RawMessage, execution string, cause error) error {
	a := &Aborter{S3: r.c, Config: cfg, Log: r.log}
	c := stepfn.Catch{ErrorType: ErrorType, Abort: func(ctx context.Context, in AbortInput) error {
		_, err := a.Handle(ctx, in)
		return err
	}}
	return c.Run(ctx, state, execution, cause)
}
