package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/s3zip/s3zip/plan"
)

// Planner validates a request, lists or reads its sources, plans the
// archive, writes the plan to the execution's work prefix and creates the
// multipart upload.
type Planner struct {
	S3     S3
	Config Config
	Log    *slog.Logger
}

// PlanInput is the PlanArchive state's payload.
type PlanInput struct {
	Request   json.RawMessage `json:"request"`
	Execution string          `json:"execution"`
	// Reads is the outcome of the read pass that Start runs for a request
	// that needs one. The layout is planned from its entries.
	Reads *ReadsDone `json:"reads,omitempty"`
	// Started is the execution's start time, from $$.Execution.StartTime.
	Started time.Time `json:"started,omitzero"`
	// Restart is a job whose upload S3 ended while completing it, caught as
	// UploadRestartError by the RestartUpload state. The planner starts the
	// upload again and returns the job with the new one.
	Restart *Job `json:"restart,omitempty"`
}

// maxManifestBytes bounds a manifest object.
const maxManifestBytes = 1 << 30

// Plan runs the planner in one call, with no Map. The lookups Start hands to
// the ReadEntries Map, pinning a manifest's objects and learning the CRC-32s
// the layout needs, are made here in process by a Reader. A request whose
// entries must be read for compression or digests needs Start's read pass.
func (pl *Planner) Plan(ctx context.Context, in PlanInput) (*Job, error) {
	run, err := pl.newRun(ctx, in, true)
	if err != nil {
		return nil, err
	}
	if req := run.req; req.Options.needsReadPass() && in.Reads == nil {
		// Planning STORED would silently ignore what the request asks for.
		return nil, requestError("options.compression %q and options.digests %q need the read pass (Planner.Start, the ReadEntries map) before the layout; this caller ran Plan directly", req.Options.Compression, req.Options.Digests)
	}
	job, rp, err := run.advance(ctx, in.Reads)
	if err == nil && rp != nil {
		return nil, fmt.Errorf("internal error: Plan was handed a %s round to run in the ReadEntries map", rp.Reads.Stage)
	}
	return job, err
}

// Start is the planner Lambda's handler for both PlanArchive and PlanLayout.
// It takes the planning from where the last read round left it, or from the
// beginning, to the next round the ReadEntries Map must run, returned as a
// ReadPlan, or to the Job. A round runs only when it has work. StagePin pins
// a manifest's objects, StageRead reads the entries for compression or
// digests, and StageCRC learns the CRC-32s the layout needs. A request that
// needs none of them runs no round, and the planner itself never makes a
// request per object.
func (pl *Planner) Start(ctx context.Context, in PlanInput) (*Job, *ReadPlan, error) {
	run, err := pl.newRun(ctx, in, false)
	if err != nil {
		return nil, nil, err
	}
	return run.advance(ctx, in.Reads)
}

// Handle returns Start's Job or ReadPlan as the one result the Lambda
// returns, or restarts the upload of in.Restart.
func (pl *Planner) Handle(ctx context.Context, in PlanInput) (any, error) {
	if in.Restart != nil {
		return pl.RestartUpload(ctx, in, in.Restart)
	}
	job, rp, err := pl.Start(ctx, in)
	switch {
	case err != nil:
		return nil, err
	case rp != nil:
		return rp, nil
	}
	return job, nil
}

// planRun holds one planner invocation's checked request, the prefix its
// work objects go under, and whether its lookups run in process, as for Plan
// and `s3zip plan`, or in the ReadEntries Map, as for Start.
type planRun struct {
	pl        *Planner
	cfg       Config
	req       *Request
	execution string
	prefix    string // the execution's work prefix
	here      bool
	started   time.Time
	// stored is what the listing, the inventory or the pins said S3 stores
	// of the sources' CRC-32s, for the CRC lookups.
	stored *storedCRCs
	// output is what the execution's output needs from the request.
	output OutputSpec
}

// newRun reads and checks the request once.
func (pl *Planner) newRun(ctx context.Context, in PlanInput, here bool) (*planRun, error) {
	cfg := pl.Config.Defaults()
	started := time.Now()
	req, err := pl.begin(ctx, cfg, in)
	if err != nil {
		return nil, err
	}
	return &planRun{pl: pl, cfg: cfg, req: req, execution: in.Execution, prefix: cfg.workPrefix(in.Execution), here: here, started: started, stored: &storedCRCs{}, output: newOutputSpec(req, in)}, nil
}

// advance plans from where the read round d left off, or from the start
// when d is nil.
func (r *planRun) advance(ctx context.Context, d *ReadsDone) (*Job, *ReadPlan, error) {
	if d.passed() == passedCRC {
		p, err := r.crcsLearned(ctx, d)
		if err != nil {
			return nil, nil, err
		}
		return r.finish(ctx, p)
	}
	entries, rp, err := r.entriesToLayOut(ctx, d)
	if err != nil || rp != nil {
		return nil, rp, err
	}
	p, err := r.layOut(ctx, entries)
	if err != nil {
		return nil, nil, err
	}
	if rp, err := r.learnCRCs(ctx, p); err != nil || rp != nil {
		return nil, rp, err
	}
	return r.finish(ctx, p)
}

// entriesToLayOut is the entries the layout is planned from, or the read
// round that must come before it.
func (r *planRun) entriesToLayOut(ctx context.Context, d *ReadsDone) ([]plan.Entry, *ReadPlan, error) {
	var entries []plan.Entry
	var err error
	switch d.passed() {
	case passedNone:
		var rp *ReadPlan
		if entries, rp, err = r.sources(ctx); err != nil || rp != nil {
			return nil, rp, err
		}
	case passedPin:
		entries, err = r.pinned(ctx, d)
	case passedRead:
		entries, err = r.readDone(ctx, d)
		return entries, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	if !r.req.Options.needsReadPass() {
		return entries, nil, nil
	}
	return r.readRound(ctx, entries)
}

// finish writes the plan, whose every CRC-32 the workers need is known,
// and creates the upload.
func (r *planRun) finish(ctx context.Context, p *plan.Plan) (*Job, *ReadPlan, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("internal error: %w", err)
	}
	job := r.pl.planFiles(r.cfg, r.req, r.execution)
	job.Output = r.output
	if err := r.pl.abortEarlierAttempt(ctx, job); err != nil {
		return nil, nil, err
	}
	// The uploads start first because a split plan's part jobs name their
	// archive's upload.
	if err := r.pl.startUploads(ctx, r.cfg, r.req, job, p); err != nil {
		return nil, nil, err
	}
	if err := r.pl.writePlan(ctx, p, job); err != nil {
		return nil, nil, err
	}
	st := p.Stats()
	r.pl.runLog(r.execution, r.req).Info("planned", "entries", st.Entries, "archiveBytes", st.ArchiveBytes, "streamedBytes", st.StreamedBytes,
		"copiedBytes", st.CopiedBytes, "parts", st.Parts, "strategy", p.Strategy, "uploadId", job.UploadID, "millis", time.Since(r.started).Milliseconds())
	return job, nil, nil
}

// runLog is the log of one execution's planning.
func (pl *Planner) runLog(execution string, req *Request) *slog.Logger {
	return logger(pl.Log).With("execution", execution, "destination", req.Destination.URI())
}

// maxConcurrency returns the Maps' concurrency, the request's if it sets one
// and the deployment's default otherwise.
func maxConcurrency(cfg Config, req *Request) int {
	if req.Options.MaxConcurrency != 0 {
		return req.Options.MaxConcurrency
	}
	return cfg.DefaultMaxConcurrency
}

// planError turns the planner core's input errors into request errors.
func planError(err error) error {
	var ne *plan.NameError
	var de *plan.DuplicateError
	var fe *plan.FolderClashError
	var ie *plan.InputError
	switch {
	case errors.As(err, &ne), errors.As(err, &de), errors.As(err, &fe), errors.As(err, &ie):
		return &failure.RequestError{Problems: []string{err.Error()}}
	}
	return err
}
