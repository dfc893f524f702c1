package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// unquotedPlaceholder is a DefinitionSubstitutions placeholder standing for a
// number (`"MaxItemsPerBatch": ${PartsPerBatch}`); quoted ones are strings
// already.
var unquotedPlaceholder = regexp.MustCompile(`:\s*\$\{[A-Za-z0-9_]+\}`)

// aslTask is one Task state of a definition, wherever it is nested.
type aslTask struct {
	file, name string
	function   string     // Parameters.FunctionName, e.g. ${WorkerFunctionArn}
	retry      [][]string // each retrier's ErrorEquals
	catch      [][]string
}

// loadASL parses every statemachine/*.asl.json and returns its Task states.
func loadASL(t *testing.T) []aslTask {
	t.Helper()
	files, err := filepath.Glob("../statemachine/*.asl.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no state machine definitions in ../statemachine (%v)", err)
	}
	var tasks []aslTask
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var def struct{ States map[string]json.RawMessage }
		if err := json.Unmarshal(unquotedPlaceholder.ReplaceAll(raw, []byte(": 1")), &def); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tasks = appendTasks(t, tasks, filepath.Base(f), def.States)
	}
	return tasks
}

func appendTasks(t *testing.T, tasks []aslTask, file string, states map[string]json.RawMessage) []aslTask {
	for name, raw := range states {
		var s struct {
			Type       string
			Parameters struct{ FunctionName string }
			Retry      []struct{ ErrorEquals []string }
			Catch      []struct{ ErrorEquals []string }
			// nested state machines: Map (ItemProcessor, or Iterator before it) and Parallel
			ItemProcessor, Iterator *struct{ States map[string]json.RawMessage }
			Branches                []struct{ States map[string]json.RawMessage }
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: state %s: %v", file, name, err)
		}
		task := aslTask{file: file, name: name, function: s.Parameters.FunctionName}
		for _, r := range s.Retry {
			task.retry = append(task.retry, r.ErrorEquals)
		}
		for _, c := range s.Catch {
			task.catch = append(task.catch, c.ErrorEquals)
		}
		if len(task.retry)+len(task.catch) > 0 || s.Type == "Task" {
			tasks = append(tasks, task)
		}
		for _, sub := range []*struct{ States map[string]json.RawMessage }{s.ItemProcessor, s.Iterator} {
			if sub != nil {
				tasks = appendTasks(t, tasks, file, sub.States)
			}
		}
		for _, b := range s.Branches {
			tasks = appendTasks(t, tasks, file, b.States)
		}
	}
	return tasks
}

// TestASLErrorNames holds the state machines and the Go error types to one
// another: every name in an ErrorEquals is one Step Functions or Lambda
// defines or one ErrorType reports; every worker Task retries every
// retryable type; no Retry retries a type that cannot heal.
func TestASLErrorNames(t *testing.T) {
	ours := append(slices.Clone(stepfn.Types), stepfn.TypeUntyped)
	workers := 0
	for _, task := range loadASL(t) {
		where := fmt.Sprintf("%s: %s", task.file, task.name)
		for _, list := range slices.Concat(task.retry, task.catch) {
			for _, name := range list {
				if !strings.HasPrefix(name, "States.") && !strings.HasPrefix(name, "Lambda.") &&
					!strings.HasPrefix(name, "Sandbox.") && !strings.HasPrefix(name, "Runtime.") && !slices.Contains(ours, name) {
					t.Errorf("%s: ErrorEquals names %q, which no handler reports (internal/stepfn/errors.go: %s)", where, name, strings.Join(ours, ", "))
				}
			}
		}
		var retried []string
		for _, list := range task.retry {
			retried = append(retried, list...)
		}
		for _, name := range retried {
			if slices.Contains(ours, name) && !slices.Contains(stepfn.RetryableTypes, name) {
				t.Errorf("%s retries %s, which cannot heal (stepfn.RetryableTypes: %v)", where, name, stepfn.RetryableTypes)
			}
		}
		if !strings.Contains(strings.ToLower(task.function), "worker") {
			continue
		}
		workers++
		for _, name := range stepfn.RetryableTypes {
			if !slices.Contains(retried, name) && !slices.Contains(retried, "States.ALL") {
				t.Errorf("worker task %s does not retry %s", where, name)
			}
		}
		// A batch that fails for a cause no retry mends ends its child with
		// the refusal, for the finalizer to report: every such name is caught.
		caught := slices.Concat(task.catch...)
		for _, name := range ours {
			if !slices.Contains(stepfn.RetryableTypes, name) && !slices.Contains(caught, name) {
				t.Errorf("worker task %s does not catch %s: a batch that cannot heal would fail the Map Run, which is kept for Redrive instead of aborted", where, name)
			}
		}
		for _, name := range stepfn.RetryableTypes {
			if slices.Contains(caught, name) || slices.Contains(caught, "States.ALL") {
				t.Errorf("worker task %s catches %s: a batch that may heal must fail the Map Run, for Redrive", where, name)
			}
		}
	}
	if workers == 0 {
		t.Error("no worker Task (FunctionName naming a worker) in statemachine/*.asl.json: the retry check checked nothing")
	}
}

// TestErrorType: each type is reported by its own name however it is
// wrapped, the first of ErrorTypes() found in the chain wins, anything else is TypeUntyped, and
// Retryable agrees with RetryableTypes.
func TestErrorType(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&failure.RequestError{Problems: []string{"x"}}, stepfn.TypeRequestError},
		{&failure.SourceChangedError{Bucket: "b", Key: "k", Err: errors.New("412")}, stepfn.TypeSourceChangedError},
		{&failure.ChecksumMismatchError{Msg: "x"}, stepfn.TypeChecksumMismatchError},
		{&failure.ChecksumMismatchError{}, stepfn.TypeChecksumMismatchError},
		{&failure.DestinationExistsError{Bucket: "b", Key: "k"}, stepfn.TypeDestinationExistsError},
		{&failure.LimitError{Msg: "x"}, stepfn.TypeLimitError},
		{&RefusedError{Op: "op", Err: errors.New("x")}, stepfn.TypeRefusedError},
		{&DeadlineError{Done: 1, Left: 2}, stepfn.TypeDeadlineError},
		{&UploadRestartError{Destination: "s3://b/k", Err: &stepfn.TransientError{Op: "op", Err: errors.New("409")}}, stepfn.TypeUploadRestartError},
		{&stepfn.TransientError{Op: "op", Err: errors.New("x")}, stepfn.TypeTransientError},
		{errors.New("plain"), stepfn.TypeUntyped},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		wrapped := fmt.Errorf("context: %w", fmt.Errorf("more: %w", c.err))
		for _, err := range []error{c.err, wrapped} {
			if got := ErrorType(err); got != c.want {
				t.Errorf("ErrorType(%T %v) = %s, want %s", err, err, got, c.want)
			}
			if got, want := Retryable(err), slices.Contains(stepfn.RetryableTypes, c.want); got != want {
				t.Errorf("Retryable(%v) = %v, want %v", err, got, want)
			}
		}
		seen[c.want] = true
	}
	for _, name := range ErrorTypes() {
		if !seen[name] {
			t.Errorf("no case for %s", name)
		}
	}
	// A cause of a transient failure does not make a bad request retryable.
	if got := ErrorType(&stepfn.TransientError{Op: "op", Err: &failure.RequestError{Problems: []string{"x"}}}); got != stepfn.TypeRequestError {
		t.Errorf("a stepfn.TransientError around a failure.RequestError is %s, want %s (the first in ErrorTypes' order)", got, stepfn.TypeRequestError)
	}
}

// A request object whose bucket and key are both wrong gets both problems,
// each on its own, before anything is read.
func TestRequestObjectProblemsAreSeparate(t *testing.T) {
	s := &fakePlannerS3{}
	pl := &Planner{S3: s, Config: Config{WorkBucket: "work", ControlBucket: "ctl"}}
	_, err := pl.Plan(context.Background(), PlanInput{Request: []byte(`{"requestObject":{"bucket":"","key":""}}`), Execution: "x"})
	var re *failure.RequestError
	if !errors.As(err, &re) || len(re.Problems) != 2 {
		t.Fatalf("err = %v, want a failure.RequestError with two problems", err)
	}
	want := "bad request (2 problems): requestObject.bucket is missing; requestObject.key is missing"
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if len(s.writes) > 0 {
		t.Errorf("wrote %v before refusing", s.writes)
	}
}

// s3Error calls a failure transient (so the state machine retries it)
// only when a retry can help, as extract's classifier does, and the typed
// error is recognised by s3err.Transient (so a retry loop does not have to
// ask twice).
func TestS3ErrorTransientOnlyWhenRetryCanHelp(t *testing.T) {
	sdk := func(cause error) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: cause}
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"connection-reset", sdk(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}), stepfn.TypeTransientError},
		{"body-cut-off", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), stepfn.TypeTransientError},
		{"response-timeout", sdk(context.DeadlineExceeded), stepfn.TypeTransientError},
		{"cancelled", sdk(context.Canceled), stepfn.TypeUntyped},
		// No status and no code is not a lost connection.
		{"not-an-s3-failure", errors.New("part 3 has no source"), stepfn.TypeUntyped},
		{"invalid-params", sdk(smithy.InvalidParamsError{Context: "GetObjectInput"}), stepfn.TypeUntyped},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorType(s3Error("GetObject", "b", "k", false, c.err)); got != c.want {
				t.Errorf("ErrorType(s3Error(%v)) = %s, want %s", c.err, got, c.want)
			}
		})
	}
	if te := fmt.Errorf("batch 2: %w", &stepfn.TransientError{Op: "op", Err: errors.New("x")}); !s3err.Transient(te) {
		t.Errorf("s3err.Transient(%v) = false: a stepfn.TransientError must say it is one", te)
	}
}
