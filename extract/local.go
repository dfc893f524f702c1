package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/workflow"
)

// Progress is how far a run is, in archive bytes.
type Progress struct {
	Jobs, JobsDone   int
	Bytes, BytesDone int64
}

// Run extracts the archive the way the state machine does, with the same
// handlers in process: Plan, the jobs in batches (at most req.Workers jobs
// at once, retried like the Map's Retry), the batch outputs written in the
// ResultWriter's layout, Finalize, and Abort on any failure or interrupt
// (every upload it began aborted, every object it wrote deleted).
func Run(ctx context.Context, c Client, req Request, onProgress func(Progress)) (*Result, error) {
	r := &runner{c: c, log: slog.New(slog.DiscardHandler), onProgress: onProgress}
	return r.run(ctx, req)
}

type runner struct {
	c          Client
	log        *slog.Logger
	onProgress func(Progress)
}

// localBatchSize is how many jobs one in-process batch runs (one at a
// time, so req.Workers batches at once are req.Workers jobs).
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
	raw, _ := json.Marshal(doc)

	planner := &Planner{S3: r.c, Config: cfg, Log: r.log}
	ex, err := planner.Plan(ctx, PlanInput{Request: raw, Execution: req.Execution})
	if err != nil {
		if plannedNothing(err) {
			return nil, err
		}
		return nil, r.abort(ctx, cfg, raw, req.Execution, err)
	}
	state, _ := json.Marshal(ex)
	res, err := r.build(ctx, cfg, ex)
	if err == nil {
		err = ctx.Err() // interrupted: undone even if every job finished
	}
	if err != nil {
		return nil, r.abort(ctx, cfg, state, ex.Execution, err)
	}
	return res, nil
}

// plannedNothing: the planner refused before writing anything.
func plannedNothing(err error) bool {
	var re *RequestError
	var rfe *RefusedError
	var ee *ExistsError
	return errors.As(err, &re) || errors.As(err, &rfe) || errors.As(err, &ee)
}

func (r *runner) build(ctx context.Context, cfg Config, ex *Extraction) (*Result, error) {
	// ItemReader
	jobs, err := readJobs(ctx, r.c, ex)
	if err != nil {
		return nil, fmt.Errorf("ItemReader: %w", err)
	}
	var total int64
	for i := range jobs {
		total += jobs[i].Bytes()
	}
	var jobsDone atomic.Int32
	var bytesDone atomic.Int64
	report := func() {
		if r.onProgress != nil {
			r.onProgress(Progress{Jobs: len(jobs), JobsDone: int(jobsDone.Load()), Bytes: total, BytesDone: bytesDone.Load()})
		}
	}
	report()
	in := FinalizeInput{Extraction: *ex}
	if len(jobs) > 0 {
		// ItemBatcher, MaxConcurrency, Retry, ResultWriter.
		var batches [][]Job
		for i := 0; i < len(jobs); i += ex.BatchSize {
			batches = append(batches, jobs[i:min(i+ex.BatchSize, len(jobs))])
		}
		w := &Worker{S3: r.c, Config: cfg, Log: r.log}
		children := make([]workflow.ChildResult, len(batches))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(ex.MaxConcurrency)
		for b, items := range batches {
			g.Go(func() error {
				if err := gctx.Err(); err != nil {
					return err
				}
				var bi BatchInput
				bi.Items, bi.BatchInput.Job = items, *ex
				var out *BatchOutput
				err := retry(gctx, func() error {
					var err error
					out, err = w.Batch(gctx, bi)
					return err
				})
				if err != nil {
					return err
				}
				doc, _ := json.Marshal(out)
				children[b] = workflow.ChildResult{Status: "SUCCEEDED", Output: string(doc)}
				for _, j := range items {
					bytesDone.Add(j.Bytes())
				}
				jobsDone.Add(int32(len(items)))
				report()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		if in.Results, err = writeResults(ctx, r.c, ex, children); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f := &Finalizer{S3: r.c, Config: cfg, Log: r.log}
	var res *Result
	err = retry(ctx, func() error {
		var err error
		res, err = f.finalize(ctx, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Plan = &Plan{Jobs: jobs, Skipped: res.Skipped, Objects: ex.Objects, Bytes: ex.Bytes, Copied: ex.Copied, Read: ex.Read, ReadBelow: ex.ReadBelow}
	return res, nil
}

// localRetry is the state machine's Retry as the local run emulates it:
// 3 tries, 200 ms × attempt apart, of the errors the state machine retries.
var localRetry = s3x.Retry{Attempts: 3, Backoff: s3x.Linear(200 * time.Millisecond), Retryable: Retryable}

// retry runs fn up to 3 times while its error is one the state machine retries.
func retry(ctx context.Context, fn func() error) error {
	return localRetry.Do(ctx, func(int) error { return fn() })
}

// writeResults writes the batch outputs in the ResultWriter's layout.
func writeResults(ctx context.Context, c Client, ex *Extraction, children []workflow.ChildResult) (*workflow.MapResults, error) {
	run := fmt.Sprintf("local-%d", time.Now().UnixNano())
	prefix := ex.WorkPrefix + "map/" + run + "/"
	var m workflow.ResultManifest
	m.DestinationBucket, m.MapRunArn = ex.WorkBucket, run
	const perFile = 1000
	for i := 0; i < len(children); i += perFile {
		key := fmt.Sprintf("%sSUCCEEDED_%d.json", prefix, i/perFile)
		doc, _ := json.Marshal(children[i:min(i+perFile, len(children))])
		if err := putWork(ctx, c, ex.WorkBucket, key, doc); err != nil {
			return nil, err
		}
		m.ResultFiles.Succeeded = append(m.ResultFiles.Succeeded, workflow.ResultFile{Key: key, Size: int64(len(doc))})
	}
	m.ResultFiles.Failed, m.ResultFiles.Pending = []workflow.ResultFile{}, []workflow.ResultFile{}
	doc, _ := json.Marshal(m)
	if err := putWork(ctx, c, ex.WorkBucket, prefix+"manifest.json", doc); err != nil {
		return nil, err
	}
	return &workflow.MapResults{MapRunArn: run, ResultWriterDetails: &workflow.ResultWriterDetails{Bucket: ex.WorkBucket, Key: prefix + "manifest.json"}}, nil
}

// abort runs the Abort handler (retried, not cancelled with the run) and
// returns the original error.
func (r *runner) abort(ctx context.Context, cfg Config, state json.RawMessage, execution string, cause error) error {
	a := &Aborter{S3: r.c, Config: cfg, Log: r.log}
	errDoc, _ := json.Marshal(map[string]string{"Error": ErrorType(cause), "Cause": cause.Error()})
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	always := localRetry
	always.Retryable = func(error) bool { return true } // the Abort state's Retry names States.ALL
	err := always.Do(cctx, func(int) error {
		_, err := a.Abort(cctx, AbortInput{State: state, Error: errDoc, Execution: execution})
		return err
	})
	if err == nil {
		return cause
	}
	return errors.Join(cause, fmt.Errorf("cleaning up after it also failed: %w", err))
}
