package deployed_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lambdaReserved are the variables Lambda itself sets in a provided.al2023
// environment (and this harness sets, with local values).
var lambdaReserved = []string{
	"AWS_LAMBDA_RUNTIME_API", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_LAMBDA_FUNCTION_NAME",
	"AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_LOG_GROUP_NAME",
	"AWS_LAMBDA_LOG_STREAM_NAME", "AWS_LAMBDA_INITIALIZATION_TYPE", "_HANDLER", "LAMBDA_TASK_ROOT", "TZ", "LANG", "PATH",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
}

func errorTypeOf(t *testing.T, res Result) string {
	t.Helper()
	var doc struct{ ErrorType, ErrorMessage string }
	if err := json.Unmarshal(res.Payload, &doc); err != nil {
		t.Fatalf("error payload %s: %v", res.Payload, err)
	}
	return doc.ErrorType
}

// A bootstrap process sees exactly the template's environment, what Lambda
// sets itself, and S3_ENDPOINT (the one local addition: where S3 is).
func TestLambdaEnvironmentIsTheTemplates(t *testing.T) {
	d := Deploy(t)
	f := d.Functions["planner"]
	res, err := d.Lambdas.Invoke(t.Context(), f, []byte(`{"request":{},"execution":"env-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.FunctionError == "" || errorTypeOf(t, res) != "RequestError" {
		t.Errorf("an empty request: %s %s, want a RequestError function error", res.FunctionError, res.Payload)
	}
	d.Lambdas.mu.Lock()
	pid := d.Lambdas.all[0].cmd.Process.Pid
	d.Lambdas.mu.Unlock()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("reading the process environment: %v", err)
	}
	var got []string
	for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got = append(got, k)
		if want, ok := f.Env[k]; ok && v != want {
			t.Errorf("%s=%q, the template says %q", k, v, want)
		}
	}
	want := append([]string{"S3_ENDPOINT"}, lambdaReserved...)
	for k := range f.Env {
		want = append(want, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("environment\n got %v\nwant %v", got, want)
	}
}

// A function that runs past its timeout is killed and reported as Lambda
// reports it (errorType Sandbox.Timedout); the next invocation gets a fresh
// environment. The handlers stop at the deadline they are given, so this test
// freezes the process (SIGSTOP) to make it overrun, and shortens the planner's
// timeout (900 s in the template) to 1 s.
func TestLambdaTimeoutIsSandboxTimedout(t *testing.T) {
	d := Deploy(t)
	f := d.Functions["planner"]
	empty := []byte(`{"request":{},"execution":"timeout-1"}`)
	if _, err := d.Lambdas.Invoke(t.Context(), f, empty); err != nil {
		t.Fatal(err)
	}
	// The planner's one environment (not merely the first one started), and
	// the invocation sent only once the kernel shows it stopped: a SIGSTOP
	// takes effect when the process is next scheduled, which on a loaded
	// machine can be after the invocation has been answered.
	var pids []int
	d.Lambdas.mu.Lock()
	for _, s := range d.Lambdas.all {
		if s.fn == f {
			pids = append(pids, s.cmd.Process.Pid)
		}
	}
	d.Lambdas.mu.Unlock()
	if len(pids) != 1 {
		t.Fatalf("%d planner environments, want the one the first invocation started", len(pids))
	}
	if err := syscall.Kill(pids[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pids[0])
	f.TimeoutSeconds = 1
	res, err := d.Lambdas.Invoke(t.Context(), f, empty)
	if err != nil {
		t.Fatal(err)
	}
	if res.FunctionError != "Unhandled" || errorTypeOf(t, res) != "Sandbox.Timedout" {
		t.Fatalf("got %q %s, want an Unhandled Sandbox.Timedout", res.FunctionError, res.Payload)
	}
	if _, _, timeouts := f.Stats(); timeouts != 1 {
		t.Errorf("timeouts = %d, want 1", timeouts)
	}
	res, err = d.Lambdas.Invoke(t.Context(), f, empty)
	if err != nil {
		t.Fatal(err)
	}
	if errorTypeOf(t, res) != "RequestError" {
		t.Errorf("after the timeout: %s, want the handler's RequestError", res.Payload)
	}
	if _, starts, _ := f.Stats(); starts != 2 {
		t.Errorf("environments started = %d, want 2 (the timed-out one is gone)", starts)
	}
}

// A function that cannot start (here: the template's WORK_BUCKET missing)
// exits; the invocation reports Runtime.ExitError as Lambda does.
func TestLambdaExitIsRuntimeExitError(t *testing.T) {
	d := Deploy(t)
	f := d.Functions["abort"]
	env := map[string]string{}
	for k, v := range f.Env {
		if k != "WORK_BUCKET" {
			env[k] = v
		}
	}
	f.Env = env
	res, err := d.Lambdas.Invoke(t.Context(), f, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.FunctionError != "Unhandled" || errorTypeOf(t, res) != "Runtime.ExitError" {
		t.Fatalf("got %q %s, want an Unhandled Runtime.ExitError", res.FunctionError, res.Payload)
	}
}

// waitStopped waits until /proc says the process is stopped (state T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state …: the state follows the last ')'.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped 10 s after SIGSTOP: %s", pid, stat)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
