package create

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
	"github.com/s3zip/s3zip/plan"
)

// BatchFunc builds one Distributed Map batch, in process with Worker.Handle
// or elsewhere, in another process or a Lambda.
type BatchFunc func(ctx context.Context, in BatchInput) (*BatchResult, error)

// Progress is reported when each phase starts and as parts are built. Parts
// and Bytes count the whole archive, every part streamed, copied, chained or
// carried and the final one, and are known from the end of planning on.
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

// Runner runs the workflow outside Step Functions, handler call for handler
// call as the state machine does. It runs PlanArchive, then ReadEntries and
// PlanLayout while the planner returns a ReadPlan, then BuildParts and
// FinalizeArchive, and Abort on any failure. The Maps' batches are
// Job.PartsPerBatch and ReadPlan.ReadsPerBatch items, at most MaxConcurrency
// at once, retried like the Map's Retry policy, with their results written
// in the ResultWriter's layout. When S3 ends the archive's upload at its
// completion with a 409 ConditionalRequestConflict, the Runner calls
// RestartUpload and builds every part anew, at most maxUploadRestarts times.
type Runner struct {
	S3         S3
	Config     Config
	Log        *slog.Logger
	Batch      BatchFunc     // nil means an in-process Worker
	Read       ReadBatchFunc // nil means an in-process Reader
	Attempts   int           // tries per batch for retryable errors, 3 by default
	OnProgress func(Progress)
	// Keep is how long a run that fails building or finalizing its parts,
	// for a cause Resumable says a retry may mend, keeps its upload and work
	// objects for Resume instead of aborting. 0 aborts every failed run.
	Keep time.Duration
}

// RunResult is a finished run's job and output.
type RunResult struct {
	Job    *Job
	Output *FinalizeOutput
}

// Run builds the archive the request asks for.
func (r *Runner) Run(ctx context.Context, request json.RawMessage, execution string) (*RunResult, error) {
	cfg := r.Config.Defaults()
	log := logger(r.Log)
	planner := &Planner{S3: r.S3, Config: cfg, Log: log}
	r.report(Progress{Phase: PhasePlanning})
	if len(request) > stepfn.MaxPayloadBytes {
		return nil, &stepfn.DataLimitError{What: "the execution's input (the request)", Bytes: len(request), Limit: stepfn.MaxPayloadBytes}
	}
	// PlanArchive returns the job, or a read round first.
	in := PlanInput{Request: request, Execution: execution, Started: time.Now()}
	job, rp, err := planState(ctx, planner, "PlanArchive", in)
	for err == nil && rp != nil {
		// HasWorkerParts routes a ReadPlan to ReadEntries, then PlanLayout,
		// which may hand over the next round.
		var results *stepfn.MapResults
		if results, err = r.readPass(ctx, cfg, log, rp); err != nil {
			state, _ := json.Marshal(rp)
			return nil, r.abort(ctx, state, execution, err)
		}
		reads := rp.Reads
		reads.Results = results
		in.Reads = &reads
		r.report(Progress{Phase: PhasePlanning}) // planning goes on from what the round learned
		if job, rp, err = planState(ctx, planner, "PlanLayout", in); err != nil {
			// The rounds left their jobs, results and compressed pieces
			// under the work prefix, so whatever PlanLayout refuses, Abort
			// removes them, as the state machine's Catch does.
			return nil, r.abort(ctx, request, execution, err)
		}
	}
	if err != nil {
		if plannedNothing(err) {
			return nil, err
		}
		return nil, r.abort(ctx, request, execution, err)
	}
	out, failure := r.build(ctx, cfg, log, job, nil)
	var restart *UploadRestartError
	for failure != nil && errors.As(failure.err, &restart) {
		next, err := planner.RestartUpload(ctx, in, job)
		if err != nil {
			failure.err = err
			break
		}
		log.Warn("S3 ended the archive's upload at its completion; started it again", "execution", execution, "restarts", next.Restarts, "error", failure.err.Error())
		job = next
		out, failure = r.build(ctx, cfg, log, job, nil)
	}
	if failure != nil {
		if kept := r.keep(ctx, job, failure, 0); kept != nil {
			return &RunResult{Job: job}, kept
		}
		state, _ := json.Marshal(job)
		return &RunResult{Job: job}, r.abort(ctx, state, execution, failure.err)
	}
	return &RunResult{Job: job, Output: out}, nil
}

// maxUploadRestarts is how many times a run starts its archive's upload
// again after S3 ended it at its completion with an UploadRestartError.
// Each time builds every part anew, and Job.Restarts counts them.
const maxUploadRestarts = 3

// planState runs the planner state PlanArchive or PlanLayout with Step
// Functions' payload quota on its input and output.
func planState(ctx context.Context, planner *Planner, state string, in PlanInput) (*Job, *ReadPlan, error) {
	// A request that is not JSON is the planner's to refuse, as
	// StartExecution would not have taken it.
	if json.Valid(in.Request) {
		if _, err := stepfn.Payload("state "+state+" input", in); err != nil {
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
	if _, err := stepfn.Payload("state "+state+" output", out); err != nil {
		return nil, nil, err
	}
	return job, rp, nil
}

// report passes p to OnProgress, if set.
func (r *Runner) report(p Progress) {
	if r.OnProgress != nil {
		r.OnProgress(p)
	}
}

// build runs BuildParts and FinalizeArchive. redrive, when set, holds the
// parts Map's children of a failed run, as stepfn.Map.Redrive takes them.
// A failure says where build stopped.
func (r *Runner) build(ctx context.Context, cfg Config, log *slog.Logger, job *Job, redrive []stepfn.ChildResult) (*FinalizeOutput, *buildFailure) {
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
	var children []stepfn.ChildResult
	if job.WorkerParts > 0 {
		var results *stepfn.MapResults
		var err error
		results, children, err = r.buildParts(ctx, cfg, job, total, redrive)
		if err != nil {
			return nil, &buildFailure{state: stateBuildParts, children: children, err: err}
		}
		in.Results = results
	}
	failed := func(err error) *buildFailure {
		return &buildFailure{state: stateFinalizeArchive, children: children, err: err}
	}
	final := header.Final.Size()
	for _, d := range header.DirectoryParts {
		final += d.Size()
	}
	r.report(Progress{Phase: PhaseFinalizing, Parts: total.Parts, PartsDone: total.Parts - 1 - len(header.DirectoryParts), Bytes: total.Bytes, BytesDone: total.Bytes - final})
	// FinalizeArchive is retried, and a finalizer run again after a
	// transient failure picks up where the last one stopped, which may be
	// after completing the upload.
	f := &Finalizer{S3: r.S3, Config: cfg, Log: log}
	if _, err := stepfn.Payload("state FinalizeArchive input", in); err != nil {
		return nil, failed(err)
	}
	var out *FinalizeOutput
	err := r.taskRetry(log, job.Execution).Do(ctx, "FinalizeArchive", func() error {
		var err error
		out, err = f.Handle(ctx, in)
		return err
	})
	if err == nil {
		_, err = stepfn.Payload("state FinalizeArchive output", out)
	}
	if err != nil {
		return nil, failed(err)
	}
	r.report(Progress{Phase: PhaseDone, Parts: total.Parts, PartsDone: total.Parts, Bytes: total.Bytes, BytesDone: total.Bytes})
	return out, nil
}

// ReadBatchFunc runs one ReadEntries batch, in process with Reader.Handle
// or elsewhere.
type ReadBatchFunc func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error)

// readPass runs the ReadEntries Distributed Map with its ItemReader over the
// read jobs, its ItemBatcher of ReadsPerBatch, MaxConcurrency and Retry. Its
// ResultWriter writes under map/reads, where Abort looks for failed batches too.
func (r *Runner) readPass(ctx context.Context, cfg Config, log *slog.Logger, rp *ReadPlan) (*stepfn.MapResults, error) {
	doc, err := getBytes(ctx, r.S3, rp.WorkBucket, rp.Reads.JobsKey, maxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("ReadEntries ItemReader: %w", err)
	}
	var jobs []ReadJob
	if err := json.Unmarshal(doc, &jobs); err != nil {
		return nil, fmt.Errorf("ReadEntries ItemReader s3://%s/%s: %w", rp.WorkBucket, rp.Reads.JobsKey, err)
	}
	batches, err := stepfn.BatchItems(jobs, rp.ReadsPerBatch, func(items []ReadJob) ReadBatchInput { return ReadBatchInput{Items: items} }, "ReadEntries")
	if err != nil {
		return nil, err
	}
	var bytesTotal int64
	for _, j := range jobs {
		bytesTotal += j.readBytes()
	}
	var done, bytesDone atomic.Int64
	r.report(Progress{Phase: PhaseReading, Parts: len(jobs), Bytes: bytesTotal})
	limit, read := rp.MaxConcurrency, r.Read
	if read == nil {
		// In process the batches share one worker's memory budget, each
		// holding at most a compressed piece and a little, and the machine's
		// connections, HeadConcurrency lookups in all.
		limit = min(limit, max(1, int(cfg.MemoryBudget/(2*cfg.PieceSize))))
		read = (&Reader{S3: r.S3, Lookups: max(1, cfg.HeadConcurrency/limit)}).Handle
	}
	m := stepfn.Map{State: "ReadEntries", MaxConcurrency: limit, Retry: r.taskRetry(log, rp.Execution), Done: func(b int) {
		var n int64
		for _, j := range batches[b].Items {
			n += j.readBytes()
		}
		r.report(Progress{Phase: PhaseReading, Parts: len(jobs), PartsDone: int(done.Add(int64(len(batches[b].Items)))), Bytes: bytesTotal, BytesDone: bytesDone.Add(n)})
	}}
	children, err := stepfn.RunMap(ctx, m, batches, read)
	if err != nil {
		return nil, err
	}
	log.Info("read pass done", "execution", rp.Execution, "jobs", len(jobs), "batches", len(batches), "bytes", bytesTotal)
	return stepfn.WriteLocalResults(ctx, putter(r.S3), rp.WorkBucket, rp.WorkPrefix+"map/reads/", children)
}

// taskRetry is the Retry of the state machine's worker Tasks.
func (r *Runner) taskRetry(log *slog.Logger, execution string) stepfn.Retry {
	return stepfn.Retry{Attempts: r.Attempts, Retryable: Retryable, Log: log.With("execution", execution)}
}

// buildParts runs the BuildParts Distributed Map with its ItemReader over
// the part jobs, ItemBatcher, MaxConcurrency, Retry and ResultWriter. Like
// stepfn.RunMap it returns the children with a failure too, for a resume.
// redrive holds a failed run's children, whose succeeded batches are not
// run again.
func (r *Runner) buildParts(ctx context.Context, cfg Config, job *Job, total Progress, redrive []stepfn.ChildResult) (*stepfn.MapResults, []stepfn.ChildResult, error) {
	log := logger(r.Log)
	_, batches, err := r.partBatches(ctx, job)
	if err != nil {
		return nil, nil, err
	}
	batch := r.Batch
	if batch == nil {
		w := &Worker{S3: r.S3, Config: cfg, Log: log}
		batch = w.Handle
	}
	var partsDone, bytesDone atomic.Int64
	m := stepfn.Map{State: stateBuildParts, MaxConcurrency: job.MaxConcurrency, Retry: r.taskRetry(log, job.Execution), Redrive: redrive, Done: func(b int) {
		// A job builds its own part and the ones it carries.
		var parts, n int64
		for _, it := range batches[b].Items {
			parts, n = parts+1, n+it.Size()
			for _, c := range it.Carried {
				parts, n = parts+1, n+c.Size()
			}
		}
		p := total
		p.PartsDone, p.BytesDone = int(partsDone.Add(parts)), bytesDone.Add(n)
		r.report(p)
	}}
	children, err := stepfn.RunMap(ctx, m, batches, func(ctx context.Context, in BatchInput) (*BatchResult, error) {
		out, err := batch(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("parts %d-%d: %w", in.Items[0].Number, in.Items[len(in.Items)-1].Number, err)
		}
		return out, nil
	})
	if err != nil {
		return nil, children, err
	}
	results, err := stepfn.WriteLocalResults(ctx, putter(r.S3), job.WorkBucket, job.WorkPrefix+"map/", children)
	return results, children, err
}

// plannedNothing reports whether the planner failed before it wrote or
// created anything. It rejects the request, a limit or an existing
// destination before its first write, so there is nothing to abort, and an
// abort against an S3 that just refused us would only fail again, loudly.
func plannedNothing(err error) bool {
	var re *failure.RequestError
	var le *failure.LimitError
	var de *failure.DestinationExistsError
	return errors.As(err, &re) || errors.As(err, &le) || errors.As(err, &de)
}

// abort runs the Abort state and returns the original error.
func (r *Runner) abort(ctx context.Context, state json.RawMessage, execution string, cause error) error {
	a := &Aborter{S3: r.S3, Config: r.Config.Defaults(), Log: r.Log}
	c := stepfn.Catch{ErrorType: ErrorType, Abort: func(ctx context.Context, in AbortInput) error {
		_, err := a.Handle(ctx, in)
		return err
	}, Retry: stepfn.Retry{Attempts: r.Attempts}}
	if r.Log != nil {
		c.Retry.Log = r.Log.With("execution", execution)
	}
	return c.Run(ctx, state, execution, cause)
}

// readBytes returns how much of its source the job reads, for progress. A
// lookup's Length is its object's size, which it does not read.
func (job ReadJob) readBytes() int64 {
	if job.Lookup != "" {
		return 0
	}
	return job.Length
}
