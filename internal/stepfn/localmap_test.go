package stepfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errHeals = &TransientError{Op: "GetObject s3://b/k", Err: errors.New("503 SlowDown")}

func retryableTransient(err error) bool { return IsA[*TransientError](err) }

// Every batch runs once, at most MaxConcurrency at a time, and the children
// come back in batch order whatever order the batches finish in.
func TestRunMapBoundsConcurrencyAndKeepsBatchOrder(t *testing.T) {
	batches := make([]int, 40)
	for i := range batches {
		batches[i] = i
	}
	var inFlight, most atomic.Int32
	var mu sync.Mutex
	done := map[int]int{}
	m := Map{State: "BuildParts", MaxConcurrency: 3, Done: func(b int) {
		mu.Lock()
		done[b]++
		mu.Unlock()
	}}
	got, err := RunMap(context.Background(), m, batches, func(ctx context.Context, in int) (map[string]int, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			old := most.Load()
			if n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
		time.Sleep(time.Duration(40-in) * 100 * time.Microsecond) // later batches finish first
		return map[string]int{"batch": in}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if most.Load() > 3 || most.Load() < 2 {
		t.Errorf("%d batches ran at once, want at most MaxConcurrency 3 (and more than one)", most.Load())
	}
	for b, ch := range got {
		if want := fmt.Sprintf(`{"batch":%d}`, b); ch.Status != "SUCCEEDED" || ch.Output != want {
			t.Errorf("child %d = %+v, want SUCCEEDED with output %s", b, ch, want)
		}
		if done[b] != 1 {
			t.Errorf("Done(%d) called %d times, want once", b, done[b])
		}
	}
}

// A batch is retried while its error is one the Task's Retry matches, up to
// the attempts; an error it does not match ends the run at once, named with
// the Map state and the batch (ToleratedFailurePercentage 0).
func TestRunMapRetriesAsTheASLDeclares(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int   // tries that fail before one succeeds
		err       error // what they fail with
		wantTries int32
		wantHeal  bool
	}{
		{"heals-on-the-second-try", 1, errHeals, 2, true},
		{"heals-on-the-last-try", DefaultAttempts - 1, errHeals, DefaultAttempts, true},
		{"never-heals", 99, errHeals, DefaultAttempts, false},
		{"not-retryable", 99, errors.New("bad request"), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tries atomic.Int32
			m := Map{State: "ReadEntries", MaxConcurrency: 2, Retry: Retry{Retryable: retryableTransient}}
			_, err := RunMap(context.Background(), m, []string{"a", "b"}, func(ctx context.Context, in string) (string, error) {
				if in == "a" {
					return "ok", nil
				}
				if tries.Add(1) <= int32(tc.failures) {
					return "", tc.err
				}
				return "ok", nil
			})
			if tries.Load() != tc.wantTries {
				t.Errorf("batch tried %d times, want %d", tries.Load(), tc.wantTries)
			}
			switch {
			case tc.wantHeal:
				if err != nil {
					t.Errorf("err = %v, want the batch to heal", err)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "ReadEntries batch 1:") || !errors.Is(err, tc.err) {
					t.Errorf("err = %v, want %v named as ReadEntries batch 1", err, tc.err)
				}
			}
		})
	}
}

// A child's result over Step Functions' 256 KiB ends the run as
// States.DataLimitExceeded would.
func TestRunMapHoldsChildResultsToThePayloadQuota(t *testing.T) {
	_, err := RunMap(context.Background(), Map{State: "BuildParts"}, []int{0, 1}, func(ctx context.Context, in int) (string, error) {
		return strings.Repeat("x", in*MaxPayloadBytes), nil
	})
	var dl *DataLimitError
	if !errors.As(err, &dl) || dl.What != "BuildParts child 1 result" || dl.Limit != MaxPayloadBytes {
		t.Fatalf("err = %v, want a DataLimitError for BuildParts child 1's result", err)
	}
}

// The first batch that fails for good cancels the ones still running and
// stops the rest from starting.
func TestRunMapFirstFailureCancelsTheRest(t *testing.T) {
	var started atomic.Int32
	batches := make([]int, 50)
	for i := range batches {
		batches[i] = i
	}
	_, err := RunMap(context.Background(), Map{State: "RunJobs", MaxConcurrency: 2}, batches, func(ctx context.Context, in int) (int, error) {
		started.Add(1)
		if in == 0 {
			return 0, errors.New("refused")
		}
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "RunJobs batch 0: refused") {
		t.Fatalf("err = %v, want batch 0's refusal", err)
	}
	if n := started.Load(); n > 4 {
		t.Errorf("%d of 50 batches started after the first failed, want the rest not started", n)
	}
}

// Retry with no Retryable retries every error, as the Abort states'
// States.ALL does; a done context stops it.
func TestRetryEveryErrorAndStopOnCancel(t *testing.T) {
	tries := 0
	err := Retry{Attempts: 2}.Do(context.Background(), "Abort", func() error {
		tries++
		return errors.New("denied")
	})
	if err == nil || tries != 2 {
		t.Errorf("Abort's retry: %d tries, err %v; want 2 tries and the error", tries, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tries = 0
	_ = Retry{}.Do(ctx, "Finalize", func() error { tries++; return errHeals })
	if tries != 1 {
		t.Errorf("a cancelled run tried %d times, want 1", tries)
	}
}

// The Catch hands Abort the error as the ASL's Catch does ({"Error","Cause"}
// with the handler's name for it), runs it although the run was cancelled,
// retries it on any error, and returns the cause with Abort's own failure.
func TestCatchRunsAbortAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cause := fmt.Errorf("BuildParts batch 2: %w", errHeals)
	var got []AbortInput
	c := Catch{ErrorType: func(err error) string {
		return NameOf(err, []ErrorKind{{Name: TypeTransientError, Is: IsA[*TransientError]}})
	},
		Abort: func(ctx context.Context, in AbortInput) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			got = append(got, in)
			return errors.New("DeleteObjects: AccessDenied")
		}, Retry: Retry{Attempts: 2}}
	err := c.Run(ctx, json.RawMessage(`{"job":1}`), "exec-1", cause)
	if !errors.Is(err, errHeals) || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("err = %v, want the cause joined with the abort's failure", err)
	}
	if len(got) != 2 {
		t.Fatalf("Abort ran %d times on a cancelled run, want 2 (every error retried)", len(got))
	}
	var e struct{ Error, Cause string }
	if json.Unmarshal(got[0].Error, &e) != nil || e.Error != TypeTransientError || e.Cause != cause.Error() || string(got[0].State) != `{"job":1}` || got[0].Execution != "exec-1" {
		t.Errorf("Abort's input = %s %s %s, want the state, {Error: TransientError, Cause: %q} and the execution", got[0].State, got[0].Error, got[0].Execution, cause)
	}
}
