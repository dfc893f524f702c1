package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/plan"
)

// S3 is everything the workflow needs of S3; *s3.Client has it all.
type S3 interface {
	PlannerS3
	WorkerS3
	FinalizerS3
	AborterS3
}

// BatchFunc builds one Distributed Map batch: in process (Worker.Build) or
// elsewhere (another process, a Lambda).
type BatchFunc func(ctx context.Context, in BatchInput) (*BatchResult, error)

// Progress is reported when each phase starts and as parts are built. Parts
// and Bytes are the whole archive's (every part: streamed, copied, chained,
// carried and the final one), known from the end of planning on.
type Progress struct {
	Phase            Phase
	PartsDone, Parts int
	BytesDone, Bytes int64
}

// Phase is a step of a run, as Progress reports it.
type Phase string

const (
	PhasePlanning   Phase = "planning"
	PhaseReading    Phase = "reading"
	PhaseBuilding   Phase = "building"
	PhaseFinalizing Phase = "finalizing"
	PhaseDone       Phase = "done"
)

// Runner runs the workflow outside Step Functions, the way the state machine
// does, handler call for handler call: PlanArchive; when it returns a
// ReadPlan, ReadEntries (batches of read jobs) and PlanLayout; BuildParts
// (batches of part jobs); FinalizeArchive; and Abort on any failure. The
// Maps' batches are Job.PartsPerBatch and ReadPlan.ReadsPerBatch items, at
// most MaxConcurrency at once, retried like the Map's Retry policy, their
// results written in the ResultWriter's layout.
type Runner struct {
	S3         S3
	Config     Config
	Log        *slog.Logger
	Batch      BatchFunc     // nil: an in-process Worker
	Read       ReadBatchFunc // nil: an in-process Reader
	Attempts   int           // tries per batch for retryable errors (default 3)
	OnProgress func(Progress)
}

// RunResult is a finished run.
type RunResult struct {
	Job    *Job
	Output *FinalizeOutput
}

// Run builds the archive the request asks for.
func (r *Runner) Run(ctx context.Context, request json.RawMessage, execution string) (*RunResult, error) {
	cfg := r.Config.Defaults()
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	planner := &Planner{S3: r.S3, Config: cfg, Log: log}
	r.report(Progress{Phase: PhasePlanning})
	if len(request) > MaxPayloadBytes {
		return nil, &DataLimitError{What: "the execution's input (the request)", Bytes: len(request), Limit: MaxPayloadBytes}
	}
	// PlanArchive: the job, or the read jobs first.
	in := PlanInput{Request: request, Execution: execution, Started: time.Now()}
	job, rp, err := planState(ctx, planner, "PlanArchive", in)
	if err == nil && rp != nil {
		// HasWorkerParts routes a ReadPlan to ReadEntries, then PlanLayout.
		var results *MapResults
		if results, err = r.readPass(ctx, cfg, log, rp); err != nil {
			state, _ := json.Marshal(rp)
			return nil, r.abort(ctx, state, execution, err)
		}
		reads := rp.Reads
		reads.Results = results
		in.Reads = &reads
		r.report(Progress{Phase: PhasePlanning}) // the layout, from the sizes read
		if job, _, err = planState(ctx, planner, "PlanLayout", in); err != nil {
			// The read pass left compressed pieces and results under the
			// work prefix: whatever PlanLayout refuses, Abort removes them,
			// as the state machine's Catch does.
			return nil, r.abort(ctx, request, execution, err)
		}
	}
	if err != nil {
		if plannedNothing(err) {
			return nil, err
		}
		return nil, r.abort(ctx, request, execution, err)
	}
	out, err := r.build(ctx, cfg, log, job)
	if err != nil {
		state, _ := json.Marshal(job)
		return &RunResult{Job: job}, r.abort(ctx, state, execution, err)
	}
	return &RunResult{Job: job, Output: out}, nil
}

// planState runs a planner state (PlanArchive, PlanLayout) with Step Functions'
// payload quota on its input and output.
func planState(ctx context.Context, planner *Planner, state string, in PlanInput) (*Job, *ReadPlan, error) {
	// A request that is not JSON is the planner's to refuse (StartExecution
	// would not have taken it).
	if json.Valid(in.Request) {
		if _, err := payload("state "+state+" input", in); err != nil {
			return nil, nil, err
		}
	}
	job, rp, err := planner.Start(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	var out any = job
	if rp != nil {
		out = rp
	}
	if _, err := payload("state "+state+" output", out); err != nil {
		return nil, nil, err
	}
	return job, rp, nil
}

func (r *Runner) report(p Progress) {
	if r.OnProgress != nil {
		r.OnProgress(p)
	}
}

func (r *Runner) build(ctx context.Context, cfg Config, log *slog.Logger, job *Job) (*FinalizeOutput, error) {
	in := FinalizeInput{Job: *job}
	// The plan's header has the totals progress is measured against. It is
	// read only for a watcher, and a failure to read it costs only the totals.
	var header plan.Header
	if r.OnProgress != nil {
		if doc, err := getBytes(ctx, r.S3, job.WorkBucket, job.PlanKey, 64<<20); err == nil {
			_ = json.Unmarshal(doc, &header)
		}
	}
	total := Progress{Phase: PhaseBuilding, Parts: header.Parts, Bytes: header.Size}
	r.report(total)
	if job.WorkerParts > 0 {
		results, err := r.buildParts(ctx, cfg, log, job, total)
		if err != nil {
			return nil, err
		}
		in.Results = results
	}
	final := header.Final.Size()
	for _, d := range header.DirectoryParts {
		final += d.Size()
	}
	r.report(Progress{Phase: PhaseFinalizing, Parts: total.Parts, PartsDone: total.Parts - 1 - len(header.DirectoryParts), Bytes: total.Bytes, BytesDone: total.Bytes - final})
	// FinalizeArchive's Retry: a finalizer run again after a transient
	// failure picks up where the last one stopped (it may have completed the upload).
	f := &Finalizer{S3: r.S3, Config: cfg, Log: log}
	if _, err := payload("state FinalizeArchive input", in); err != nil {
		return nil, err
	}
	var out *FinalizeOutput
	err := r.retry(ctx, func() error {
		var err error
		out, err = f.Finalize(ctx, in)
		return err
	}, Retryable, "finalize", job.Execution)
	if err == nil {
		_, err = payload("state FinalizeArchive output", out)
	}
	if err == nil {
		r.report(Progress{Phase: PhaseDone, Parts: total.Parts, PartsDone: total.Parts, Bytes: total.Bytes, BytesDone: total.Bytes})
	}
	return out, err
}

// ReadBatchFunc runs one ReadEntries batch: in process (Reader.ReadBatch)
// or elsewhere.
type ReadBatchFunc func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error)

// readPass is the ReadEntries Distributed Map: ItemReader over the read
// jobs, ItemBatcher (ReadsPerBatch), MaxConcurrency, Retry, ResultWriter
// (under map/reads, where Abort looks for failed batches too).
func (r *Runner) readPass(ctx context.Context, cfg Config, log *slog.Logger, rp *ReadPlan) (*MapResults, error) {
	doc, err := getBytes(ctx, r.S3, rp.WorkBucket, rp.Reads.JobsKey, maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("ReadEntries ItemReader: %w", err)
	}
	var jobs []ReadJob
	if err := json.Unmarshal(doc, &jobs); err != nil {
		return nil, fmt.Errorf("ReadEntries ItemReader s3://%s/%s: %w", rp.WorkBucket, rp.Reads.JobsKey, err)
	}
	read := r.Read
	if read == nil {
		read = (&Reader{S3: r.S3}).ReadBatch
	}
	batches, err := batchItems(jobs, max(1, rp.ReadsPerBatch), func(items []ReadJob) any { return ReadBatchInput{Items: items} }, "ReadEntries")
	if err != nil {
		return nil, err
	}
	var bytesTotal int64
	for _, j := range jobs {
		bytesTotal += j.Length
	}
	var done, bytesDone atomic.Int64
	r.report(Progress{Phase: PhaseReading, Parts: len(jobs), Bytes: bytesTotal})
	children := make([]ChildResult, len(batches))
	limit := rp.MaxConcurrency
	if r.Read == nil {
		// In process the batches share one worker's memory budget: each holds
		// at most a compressed piece (never more than the piece) and a little.
		limit = min(limit, max(1, int(cfg.MemoryBudget/(2*cfg.PieceSize))))
	}
	err = forEach(ctx, limit, len(batches), func(ctx context.Context, b int) error {
		in := ReadBatchInput{Items: batches[b]}
		var out *ReadBatchResult
		err := r.retry(ctx, func() error {
			var err error
			out, err = read(ctx, in)
			return err
		}, Retryable, "read batch", rp.Execution)
		if err != nil {
			return fmt.Errorf("read batch %d: %w", b, err)
		}
		output, err := payload(fmt.Sprintf("ReadEntries child %d result", b), out)
		if err != nil {
			return err
		}
		children[b] = ChildResult{Status: "SUCCEEDED", Output: string(output)}
		var n int64
		for _, j := range in.Items {
			n += j.Length
		}
		r.report(Progress{Phase: PhaseReading, Parts: len(jobs), PartsDone: int(done.Add(int64(len(in.Items)))), Bytes: bytesTotal, BytesDone: bytesDone.Add(n)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	log.Info("read pass done", "execution", rp.Execution, "jobs", len(jobs), "batches", len(batches), "bytes", bytesTotal)
	return writeMapResults(ctx, r.S3, rp.WorkBucket, rp.WorkPrefix+"map/reads/", children)
}

// retry runs fn up to Attempts times while should(err) says the state
// machine's Retry would run it again.
func (r *Runner) retry(ctx context.Context, fn func() error, should func(error) bool, what, execution string) error {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	var err error
	for attempt := 1; attempt <= attempts; attempt++ {
		if err = fn(); err == nil || !should(err) || ctx.Err() != nil {
			return err
		}
		if r.Log != nil {
			r.Log.Warn(what+" failed; retrying", "execution", execution, "attempt", attempt, "error", err.Error())
		}
		select {
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return err
}

// buildParts is the Distributed Map: ItemReader over the part jobs,
// ItemBatcher, MaxConcurrency, Retry, ResultWriter.
func (r *Runner) buildParts(ctx context.Context, cfg Config, log *slog.Logger, job *Job, total Progress) (*MapResults, error) {
	doc, err := getBytes(ctx, r.S3, job.WorkBucket, job.PartsKey, 1<<30)
	if err != nil {
		return nil, fmt.Errorf("ItemReader: %w", err)
	}
	items, err := plan.DecodeParts(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("ItemReader: %w", err)
	}
	batches, err := batchItems(items, max(1, job.PartsPerBatch), func(items []plan.PartJob) any {
		var in BatchInput
		in.Items, in.BatchInput.Job = items, *job
		return in
	}, "BuildParts")
	if err != nil {
		return nil, err
	}
	batch := r.Batch
	if batch == nil {
		w := &Worker{S3: r.S3, Config: cfg, Log: log}
		batch = w.Build
	}
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	var partsDone, bytesDone atomic.Int64
	children := make([]ChildResult, len(batches))
	err = forEach(ctx, job.MaxConcurrency, len(batches), func(ctx context.Context, b int) error {
		var in BatchInput
		in.Items = batches[b]
		in.BatchInput.Job = *job
		var out *BatchResult
		var err error
		for attempt := 1; attempt <= attempts; attempt++ {
			out, err = batch(ctx, in)
			if err == nil || !Retryable(err) || ctx.Err() != nil {
				break
			}
			log.Warn("batch failed; retrying", "execution", job.Execution, "batch", b, "attempt", attempt, "error", err.Error())
			select {
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		if err != nil {
			return fmt.Errorf("batch %d (parts %d-%d): %w", b, in.Items[0].Number, in.Items[len(in.Items)-1].Number, err)
		}
		output, err := payload(fmt.Sprintf("BuildParts child %d result (parts %d-%d)", b, in.Items[0].Number, in.Items[len(in.Items)-1].Number), out)
		if err != nil {
			return err
		}
		children[b] = ChildResult{Status: "SUCCEEDED", Output: string(output)}
		// A job builds its own part and the ones it carries.
		var parts, n int64
		for _, it := range in.Items {
			parts, n = parts+1, n+it.Size()
			for _, c := range it.Carried {
				parts, n = parts+1, n+c.Size()
			}
		}
		p := total
		p.PartsDone, p.BytesDone = int(partsDone.Add(parts)), bytesDone.Add(n)
		r.report(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return writeMapResults(ctx, r.S3, job.WorkBucket, job.WorkPrefix+"map/", children)
}

// writeMapResults writes the ResultWriter's layout under prefix: result
// files and a manifest.
func writeMapResults(ctx context.Context, c objectPutter, bucket, prefix string, children []ChildResult) (*MapResults, error) {
	run := fmt.Sprintf("local-%d", time.Now().UnixNano())
	prefix += run + "/"
	put := func(key string, v any) (int64, error) {
		doc, err := json.Marshal(v)
		if err != nil {
			return 0, err
		}
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))})
		return int64(len(doc)), s3Error("PutObject", bucket, key, false, err)
	}
	var m ResultManifest
	m.DestinationBucket, m.MapRunArn = bucket, run
	const perFile = 1000
	for i := 0; i < len(children); i += perFile {
		key := fmt.Sprintf("%sSUCCEEDED_%d.json", prefix, i/perFile)
		size, err := put(key, children[i:min(i+perFile, len(children))])
		if err != nil {
			return nil, err
		}
		m.ResultFiles.Succeeded = append(m.ResultFiles.Succeeded, ResultFile{Key: key, Size: size})
	}
	m.ResultFiles.Failed, m.ResultFiles.Pending = []ResultFile{}, []ResultFile{}
	if _, err := put(prefix+"manifest.json", m); err != nil {
		return nil, err
	}
	return &MapResults{MapRunArn: run, ResultWriterDetails: &ResultWriterDetails{Bucket: bucket, Key: prefix + "manifest.json"}}, nil
}

// plannedNothing reports whether the planner failed before it wrote or
// created anything: it rejects the request, a limit or an existing
// destination before its first write, so there is nothing to abort (and an
// abort against an S3 that just refused us would only fail again, loudly).
func plannedNothing(err error) bool {
	var re *RequestError
	var le *LimitError
	var de *DestinationExistsError
	return errors.As(err, &re) || errors.As(err, &le) || errors.As(err, &de)
}

// abort runs the Abort state and returns the original error.
func (r *Runner) abort(ctx context.Context, state json.RawMessage, execution string, cause error) error {
	cfg := r.Config.Defaults()
	a := &Aborter{S3: r.S3, Config: cfg, Log: r.Log}
	errDoc, _ := json.Marshal(map[string]string{"Error": ErrorType(cause), "Cause": cause.Error()})
	// Clean up even when the run was cancelled.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	// The Abort state retries every error.
	abort := func() error {
		_, err := a.Abort(cctx, AbortInput{State: state, Error: errDoc, Execution: execution})
		return err
	}
	if err := r.retry(cctx, abort, func(error) bool { return true }, "abort", execution); err != nil {
		return errors.Join(cause, fmt.Errorf("abort: %w", err))
	}
	return cause
}
