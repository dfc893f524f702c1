package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/s3zip/s3zip/plan"
)

// PlannerS3 is everything the planner does with S3; a client without one of
// these does not compile as a planner's.
type PlannerS3 interface {
	objectGetter  // request objects, manifests, sources without a stored CRC
	objectHeader  // the destination's and the sources' checks, stored CRCs
	objectPutter  // plan, entries, parts, pad, upload record
	objectDeleter // listing sources; the read pass drops its pieces
	uploadCreator // the archive's upload, the CRC probe's
	partCopier    // the CRC probe; the read pass joins compressed pieces
	partUploader  // the read pass joins compressed pieces
	uploadCompleter
	uploadLister // aborts an earlier attempt's upload and stray creates
}

// Planner validates a request, lists or reads its sources, plans the
// archive, writes the plan to the execution's work prefix and creates the
// multipart upload.
type Planner struct {
	S3     PlannerS3
	Config Config
	Log    *slog.Logger
}

// PlanInput is the PlanArchive state's payload.
type PlanInput struct {
	Request   json.RawMessage `json:"request"`
	Execution string          `json:"execution"`
	// Reads is the read pass's outcome, when the request needed one
	// (Start): the layout is planned from its entries.
	Reads *ReadsDone `json:"reads,omitempty"`
	// Started is when the execution started ($$.Execution.StartTime).
	Started time.Time `json:"started,omitzero"`
}

// Job is what every later state needs: small, whatever the archive's size.
type Job struct {
	Execution      string      `json:"execution"`
	WorkBucket     string      `json:"workBucket"`
	WorkPrefix     string      `json:"workPrefix"`
	PlanKey        string      `json:"planKey"`
	EntriesKey     string      `json:"entriesKey"`
	PartsKey       string      `json:"partsKey"`
	PadKey         string      `json:"padKey,omitempty"` // the zero pad chains start from
	Destination    Destination `json:"destination"`
	UploadID       string      `json:"uploadId"`
	WorkerParts    int         `json:"workerParts"` // part jobs: lines of parts.jsonl
	MaxConcurrency int         `json:"maxConcurrency"`
	PartsPerBatch  int         `json:"partsPerBatch"` // BuildParts' MaxItemsPerBatchPath
	// PartsInFlight is the parts one worker builds at once, as the plan
	// was priced (plan.Fit.InFlight); 0 leaves the deployment's
	// PART_CONCURRENCY.
	PartsInFlight int `json:"partsInFlight,omitempty"`
	// Archives is how many archives a split run writes (0: one, at
	// Destination, with UploadID); each part job names its archive's upload.
	Archives int `json:"archives,omitempty"`
	// Overwrite allows replacing an existing archive; without it the upload
	// completes only if the key is still free (If-None-Match).
	Overwrite bool `json:"overwrite,omitempty"`
	// Output is what the finalizer's output carries from the request.
	Output OutputSpec `json:"output"`
}

// maxManifestBytes bounds a manifest object.
const maxManifestBytes = 1 << 30

// Plan runs the planner: check the request, list or read the sources,
// lay the archive out, write the plan, then create the upload.
func (pl *Planner) Plan(ctx context.Context, in PlanInput) (*Job, error) {
	cfg := pl.Config.Defaults()
	req, err := pl.begin(ctx, cfg, in)
	if err != nil {
		return nil, err
	}
	return pl.plan(ctx, cfg, req, in)
}

// plan is Plan given the checked request: each step's file (planner_*.go)
// holds it top to bottom.
func (pl *Planner) plan(ctx context.Context, cfg Config, req *Request, in PlanInput) (*Job, error) {
	started := time.Now()
	log := pl.runLog(in.Execution, req)
	if req.Options.needsReadPass() && in.Reads == nil {
		// Planning STORED would silently ignore what the request asks for.
		return nil, requestError("options.compression %q and options.digests %q need the read pass (Planner.Start, the ReadEntries map) before the layout; this caller ran Plan directly", req.Options.Compression, req.Options.Digests)
	}
	var entries []plan.Entry
	var err error
	if in.Reads != nil {
		entries, err = pl.readEntries(ctx, cfg, req, in.Execution, in.Reads)
	} else {
		entries, err = pl.listed(ctx, cfg, req)
	}
	if err != nil {
		return nil, err
	}
	p, err := pl.layOut(ctx, cfg, req, entries, in.Execution)
	if err != nil {
		return nil, err
	}
	job := pl.planFiles(cfg, req, in.Execution)
	job.Output = newOutputSpec(req, in)
	if err := pl.abortEarlierAttempt(ctx, job); err != nil {
		return nil, err
	}
	// The uploads first: a split plan's part jobs name their archive's.
	if err := pl.startUploads(ctx, cfg, req, job, p); err != nil {
		return nil, err
	}
	if err := pl.writePlan(ctx, p, job); err != nil {
		return nil, err
	}
	st := p.Stats()
	log.Info("planned", "entries", st.Entries, "archiveBytes", st.ArchiveBytes, "streamedBytes", st.StreamedBytes,
		"copiedBytes", st.CopiedBytes, "parts", st.Parts, "strategy", p.Strategy, "uploadId", job.UploadID, "millis", time.Since(started).Milliseconds())
	return job, nil
}

func (pl *Planner) logger() *slog.Logger {
	if pl.Log != nil {
		return pl.Log
	}
	return slog.Default()
}

// runLog is the log of one execution's planning.
func (pl *Planner) runLog(execution string, req *Request) *slog.Logger {
	return pl.logger().With("execution", execution, "destination", req.Destination.URI())
}

// maxConcurrency is the Maps' concurrency: the request's, else the
// deployment's default.
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
	var le *plan.LimitError
	switch {
	case errors.As(err, &ne), errors.As(err, &de), errors.As(err, &fe), errors.As(err, &ie):
		return &RequestError{[]string{err.Error()}}
	case errors.As(err, &le):
		return &LimitError{le.Msg}
	}
	return err
}
