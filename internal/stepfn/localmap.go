package stepfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3err"
)

// The local runs (the CLI's create, its read pass, extract) run the state
// machines' Maps in process. Retry and Map are those states as the ASL
// declares them, so the three runs cannot drift apart.

// DefaultAttempts is how many times a local run tries a Task: the ASL's
// MaxAttempts are for AWS's throttling and cold starts, which a process
// does not have; three tries are enough to ride out a transient S3 error.
const DefaultAttempts = 3

// retryDelay is the wait after the first failed try; it grows linearly.
const retryDelay = 200 * time.Millisecond

// Retry is a Task state's Retry.
type Retry struct {
	Attempts  int              // tries in all; 0: DefaultAttempts
	Retryable func(error) bool // whether ErrorEquals matches; nil: every error (States.ALL)
	Log       *slog.Logger     // nil: retries are not logged
}

// Do runs fn until it succeeds, its error is not retryable, the tries are
// used up or ctx is done; what names the Task in the log.
func (r Retry) Do(ctx context.Context, what string, fn func() error) error {
	attempts, retryable := r.Attempts, r.Retryable
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	if retryable == nil {
		retryable = func(error) bool { return true }
	}
	try := s3err.Retry{Attempts: attempts, Backoff: s3err.Linear(retryDelay), Retryable: retryable}
	return try.Do(ctx, func(attempt int) error {
		err := fn()
		if err != nil && attempt < attempts && retryable(err) && r.Log != nil {
			r.Log.Warn(what+" failed; retrying", "attempt", attempt, "error", err.Error())
		}
		return err
	})
}

// Map is a Distributed Map state run in process: its batches (cut by
// BatchItems, the ItemBatcher) run at most MaxConcurrency at once, each
// retried by Retry; with ToleratedFailurePercentage 0, as every Map of ours
// declares, the first batch that still fails ends the run and cancels the
// others. Each child's result is held to MaxPayloadBytes.
type Map struct {
	State          string // the Map state's name, for errors: "BuildParts"
	MaxConcurrency int    // 0: one at a time
	Retry          Retry
	// Done, when set, is called after batch b succeeded (progress); it may
	// be called from several goroutines at once.
	Done func(b int)
	// Redrive holds, by batch, the children of an earlier run of this Map
	// that failed: a batch whose child SUCCEEDED is not run again and keeps
	// its record, as a redriven Map Run re-runs only its failed and not-run
	// child executions. nil runs every batch.
	Redrive []ChildResult
}

// RunMap runs every batch with run and returns the children's records, in
// batch order, for WriteLocalResults. When a batch fails, the records are
// returned with the error: the batches that succeeded hold theirs (Status
// SUCCEEDED), the others none, and a redrive (Map.Redrive) runs those.
func RunMap[In, Out any](ctx context.Context, m Map, batches []In, run func(ctx context.Context, in In) (Out, error)) ([]ChildResult, error) {
	children := make([]ChildResult, len(batches))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(m.MaxConcurrency, 1))
	for b, in := range batches {
		if b < len(m.Redrive) && m.Redrive[b].Status == StatusSucceeded {
			children[b] = m.Redrive[b]
			continue
		}
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			var out Out
			err := m.Retry.Do(ctx, fmt.Sprintf("%s batch %d", m.State, b), func() error {
				var err error
				out, err = run(ctx, in)
				return err
			})
			if err != nil {
				return fmt.Errorf("%s batch %d: %w", m.State, b, err)
			}
			doc, err := Payload(fmt.Sprintf("%s child %d result", m.State, b), out)
			if err != nil {
				return err
			}
			children[b] = ChildResult{Status: StatusSucceeded, Output: string(doc)}
			if m.Done != nil {
				m.Done(b)
			}
			return nil
		})
	}
	return children, g.Wait()
}

// abortTimeout bounds a local Abort that runs after the run was cancelled.
const abortTimeout = 2 * time.Minute

// Catch is a state's Catch to the Abort state, run locally: the error
// caught, named as the handler names it, goes to Abort with the state input
// at the failure.
type Catch struct {
	ErrorType func(error) string                             // the workflow's ErrorType
	Abort     func(ctx context.Context, in AbortInput) error // the Abort state's handler
	Retry     Retry                                          // the Abort state's: nil Retryable, every error (States.ALL)
}

// Run runs Abort for cause, even when ctx is done (cleaning up is what an
// interrupted run needs most), and returns cause, joined with Abort's own
// failure when it failed too.
func (c Catch) Run(ctx context.Context, state json.RawMessage, execution string, cause error) error {
	errDoc, _ := json.Marshal(map[string]string{"Error": c.ErrorType(cause), "Cause": cause.Error()})
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	err := c.Retry.Do(actx, "Abort", func() error {
		return c.Abort(actx, AbortInput{State: state, Error: errDoc, Execution: execution})
	})
	if err != nil {
		return errors.Join(cause, fmt.Errorf("abort: cleaning up after the failure also failed: %w", err))
	}
	return cause
}
