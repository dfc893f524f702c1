package stepfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// StatusSucceeded is a child execution's Status when it succeeded.
const StatusSucceeded = "SUCCEEDED"

// A run that fails for a cause a retry may mend (Resumable) after its
// retries is kept rather than aborted: its upload and work objects stay
// until Kept.Until, and a redrive continues it from the state that failed,
// as Step Functions' RedriveExecution continues a failed execution from its
// unsuccessful step with the same input and re-runs only the failed and
// not-run children of a failed Distributed Map Run (AWS Step Functions
// Developer Guide, "Redriving executions" and "Redriving Map Runs"). The
// local runs write the record here; a deployed run needs none, since Step
// Functions keeps the execution's history.

// KeptName is the kept record's name in a run's work prefix.
const KeptName = "kept.json"

// Kept is the record of a kept local run: the state to continue from, its
// input, and, when that state is a Map, the children of its failed run.
type Kept struct {
	Execution string          `json:"execution"`
	State     string          `json:"state"` // the state that failed: a Map, or the finalizer
	Input     json.RawMessage `json:"input"` // that state's input
	// Children are the failed Map run's children by batch: SUCCEEDED ones
	// with their output, the rest empty. None when State is not a Map.
	Children []ChildResult `json:"children,omitempty"`
	Error    string        `json:"error"`
	Cause    string        `json:"cause"`
	Failed   time.Time     `json:"failed"`
	Until    time.Time     `json:"until"` // after this, clean-up may remove the run
	// Redrives counts the times the run was continued.
	Redrives int `json:"redrives,omitempty"`
}

// Resumable reports whether a run that failed with err may be kept for a
// redrive: err is of a kind retrying may mend (retryable, as the workflow
// names them) and is not the run being cancelled. A refusal, a changed
// source or bad input is not: no retry mends those, so their run aborts.
func Resumable(err error, retryable func(error) bool) bool {
	return err != nil && !errors.Is(err, context.Canceled) && retryable(err)
}

// WriteKept writes k to prefix's kept record.
func WriteKept(ctx context.Context, put PutFunc, bucket, prefix string, k *Kept) error {
	doc, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("kept record of %s: %w", k.Execution, err)
	}
	return put(ctx, bucket, prefix+KeptName, doc)
}

// ReadKept reads prefix's kept record.
func ReadKept(ctx context.Context, get GetFunc, bucket, prefix string) (*Kept, error) {
	doc, err := get(ctx, bucket, prefix+KeptName, MaxResultFileBytes)
	if err != nil {
		return nil, err
	}
	var k Kept
	if err := json.Unmarshal(doc, &k); err != nil {
		return nil, fmt.Errorf("kept record s3://%s/%s%s: %w", bucket, prefix, KeptName, err)
	}
	return &k, nil
}

// KeptError is a run's failure when the run was kept for a redrive: the
// cause, with how long the run waits.
type KeptError struct {
	Execution string
	Until     time.Time
	Err       error
}

func (e *KeptError) Error() string {
	return fmt.Sprintf("%v; run %s is kept for a resume until %s (its upload and work objects stay until then)",
		e.Err, e.Execution, e.Until.UTC().Format(time.RFC3339))
}

func (e *KeptError) Unwrap() error { return e.Err }
