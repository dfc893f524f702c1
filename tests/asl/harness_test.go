package asl_test

// The harness: the Go handlers behind an HTTP server on loopback, the S3 side of
// the Distributed Map adapter, and a runner for execute.ts (README.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/mapadapter"
)

// LambdaErrorType is the errorType the s3zip Lambdas report for an error:
// functions/*/main.go start the create handlers with lambdaenv.Start and
// create.ErrorType (the first s3zip error type in the chain).
func LambdaErrorType(err error) string { return create.ErrorType(err) }

// Fault lets a test fail or delay an invocation: called before the handler
// with the function's invocation count (1 for the first); a non-nil error is
// returned as the function's error instead of running the handler.
type Fault func(ctx context.Context, attempt int, payload json.RawMessage) error

// Invocation is one recorded call of a function.
type Invocation struct {
	Function  string
	Attempt   int
	Err       error  // nil when it succeeded
	ErrorType string // what the function reported (Lambda semantics)
	Output    any    // what it returned, when it succeeded
}

// Functions serves the five handlers over HTTP the way Lambda would run them.
type Functions struct {
	S3 create.S3
	// PlannerS3, when set, is the planner's client instead of S3: a test
	// counts the planner's own requests on it.
	PlannerS3 create.S3
	Config    create.Config
	Log       *slog.Logger
	// ErrorType names a returned error as Lambda reports it (default LambdaErrorType).
	ErrorType func(error) string
	// Links signs the finalizer's download links (functions/finalizer: its role's credentials).
	Links create.LinkSigner

	mu      sync.Mutex
	faults  map[string]Fault
	outputs map[string]func(any) any
	calls   []Invocation
	count   map[string]int
}

// SetOutput installs (nil: removes) a change to what function fn returns
// when it succeeds: an output the real handler would not give.
func (f *Functions) SetOutput(fn string, change func(out any) any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outputs == nil {
		f.outputs = map[string]func(any) any{}
	}
	f.outputs[fn] = change
}

// SetFault installs (nil: removes) the fault hook of function fn.
func (f *Functions) SetFault(fn string, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.faults == nil {
		f.faults = map[string]Fault{}
	}
	f.faults[fn] = fault
}

// Calls returns the invocations of fn so far ("" for all).
func (f *Functions) Calls(fn string) []Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Invocation
	for _, c := range f.calls {
		if fn == "" || c.Function == fn {
			out = append(out, c)
		}
	}
	return out
}

// Configure changes the handlers' Config, also while the server runs.
func (f *Functions) Configure(change func(*create.Config)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.Config)
}

func (f *Functions) handler(name string) (func(context.Context, json.RawMessage) (any, error), bool) {
	f.mu.Lock()
	cfg := f.Config
	f.mu.Unlock()
	switch name {
	case "planner":
		c := f.S3
		if f.PlannerS3 != nil {
			c = f.PlannerS3
		}
		h := &create.Planner{S3: c, Config: cfg, Log: f.Log}
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in create.PlanInput
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, err
			}
			return h.Handle(ctx, in)
		}, true
	case "reader":
		h := &create.Reader{S3: f.S3}
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in create.ReadBatchInput
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, err
			}
			return h.Handle(ctx, in)
		}, true
	case "worker":
		h := &create.Worker{S3: f.S3, Config: cfg, Log: f.Log}
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in create.BatchInput
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, err
			}
			return h.Handle(ctx, in)
		}, true
	case "finalizer":
		h := &create.Finalizer{S3: f.S3, Config: cfg, Log: f.Log, Links: f.Links}
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in create.FinalizeInput
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, err
			}
			return h.Handle(ctx, in)
		}, true
	case "abort":
		h := &create.Aborter{S3: f.S3, Config: cfg, Log: f.Log, Sleep: func(time.Duration) { time.Sleep(20 * time.Millisecond) }}
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in create.AbortInput
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, err
			}
			return h.Handle(ctx, in)
		}, true
	}
	return nil, false
}

// ServeHTTP: POST /invoke/{planner|reader|worker|finalizer|abort} and /adapter/{read-items|write-results}.
func (f *Functions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "POST a JSON body", http.StatusBadRequest)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/invoke/"):
		f.invoke(w, r.Context(), strings.TrimPrefix(r.URL.Path, "/invoke/"), body)
	case r.URL.Path == "/adapter/read-items":
		out, err := mapadapter.ReadItems(r.Context(), f.S3, body)
		reply(w, out, err, "States.ItemReaderFailed")
	case r.URL.Path == "/adapter/write-results":
		out, err := mapadapter.WriteResults(r.Context(), f.S3, body)
		reply(w, out, err, "States.ResultWriterFailed")
	default:
		http.NotFound(w, r)
	}
}

func (f *Functions) invoke(w http.ResponseWriter, ctx context.Context, name string, payload []byte) {
	h, ok := f.handler(name)
	if !ok {
		// What the lambda:invoke integration reports for a function that does not exist.
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorType": "Lambda.ResourceNotFoundException", "errorMessage": "no function " + name})
		return
	}
	f.mu.Lock()
	if f.count == nil {
		f.count = map[string]int{}
	}
	f.count[name]++
	attempt := f.count[name]
	fault, change := f.faults[name], f.outputs[name]
	f.mu.Unlock()

	var out any
	var err error
	if fault != nil {
		err = fault(ctx, attempt, payload)
	}
	if err == nil {
		out, err = h(ctx, payload)
	}
	if err == nil && change != nil {
		out = change(out)
	}
	inv := Invocation{Function: name, Attempt: attempt, Err: err, Output: out}
	if err != nil {
		errorType := f.ErrorType
		if errorType == nil {
			errorType = LambdaErrorType
		}
		inv.ErrorType = errorType(err)
	}
	f.mu.Lock()
	f.calls = append(f.calls, inv)
	f.mu.Unlock()
	if err != nil {
		// The Lambda runtime's error document; Step Functions matches Retry/Catch on errorType.
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorType": inv.ErrorType, "errorMessage": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

func reply(w http.ResponseWriter, out any, err error, errorType string) {
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorType": errorType, "errorMessage": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// Serve starts the functions on 127.0.0.1 and returns the base URL.
func (f *Functions) Serve(t *testing.T) string { return serve(t, f) }

// serve starts h on 127.0.0.1 and returns the base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// Outcome is what execute.ts prints.
type Outcome struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
	Cause  string          `json:"cause"`
	Events []Event         `json:"events"`
	// Redrive is a failed execution's redrive record, for RunOptions.Redrive.
	Redrive json.RawMessage `json:"redrive"`
}

// Event is one engine event (adapter.ts SimpleEvent).
type Event struct {
	Type        string   `json:"type"`
	State       string   `json:"state"`
	Child       string   `json:"child"`
	Error       string   `json:"error"`
	Attempt     int      `json:"attempt"`
	ErrorEquals []string `json:"errorEquals"`
}

// repoRoot is the module root (this package is tests/asl).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	return root
}

// requireNode fails (never skips) when node or the npm packages are missing.
func requireNode(t *testing.T, root string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on PATH: these tests run statemachine/archive.asl.json with aws-local-stepfunctions (Node >= 20)")
	}
	for _, pkg := range []string{"aws-local-stepfunctions", "tsx"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("node_modules/%s is missing: run `npm ci` (or `make node`) in %s first", pkg, root)
		}
	}
	return node
}

// RunOptions configure one execution. (Batch sizes come from the state:
// set Functions.Config.PartsPerBatch / MaxReadsPerBatch.)
type RunOptions struct {
	Execution   string
	RetryMillis string // "" → execute.ts default; "asl" keeps the ASL's intervals
	// RetryScale, instead of RetryMillis: the ASL's own intervals, backoff
	// and jitter, IntervalSeconds and MaxDelaySeconds times this factor.
	RetryScale float64
	// LambdaConcurrency > 0 throttles every invocation beyond that many at
	// once (Lambda.TooManyRequestsException), as a Lambda account does.
	LambdaConcurrency int
	// Timeout bounds the execution (default 2 minutes).
	Timeout time.Duration
	// Redrive, a failed execution's Outcome.Redrive, redrives that
	// execution (adapter.ts Redrive) instead of starting one with input.
	Redrive json.RawMessage
}

// Execute runs statemachine/archive.asl.json once with input against the
// functions at url and returns the outcome.
func Execute(t *testing.T, url string, input any, o RunOptions) *Outcome {
	t.Helper()
	root := repoRoot(t)
	node := requireNode(t, root)
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--import", "tsx", filepath.Join("tests", "asl", "execute.ts"))
	cmd.Dir = root
	// A file, not the environment: one variable holds at most 128 KiB on
	// Linux, and inputs over Step Functions' 256 KiB are tested too.
	inputFile := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(inputFile, in, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(),
		"ASL_INVOKE_URL="+url,
		"ASL_INPUT_FILE="+inputFile,
		"ASL_EXECUTION_NAME="+o.Execution,
		"ASL_RETRY_MS="+o.RetryMillis,
	)
	if o.RetryScale > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("ASL_RETRY_SCALE=%g", o.RetryScale))
	}
	if o.LambdaConcurrency > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("ASL_LAMBDA_CONCURRENCY=%d", o.LambdaConcurrency))
	}
	if o.Redrive != nil {
		redriveFile := filepath.Join(t.TempDir(), "redrive.json")
		if err := os.WriteFile(redriveFile, o.Redrive, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "ASL_REDRIVE_FILE="+redriveFile)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node execute.ts: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var out Outcome
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("execute.ts output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return &out
}
