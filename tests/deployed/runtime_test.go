package deployed_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
// sets itself, and the two local additions: S3_ENDPOINT (where S3 is) and
// TMPDIR (the environment's own /tmp, limits_test.go).
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
	var got []string
	for k, v := range environOf(t, d.Lambdas.onlyPid(t, f)) {
		got = append(got, k)
		if want, ok := f.Env[k]; ok && v != want {
			t.Errorf("%s=%q, the template says %q", k, v, want)
		}
	}
	want := append([]string{"S3_ENDPOINT", "TMPDIR"}, lambdaReserved...)
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
	pid := d.Lambdas.onlyPid(t, f)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)
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

// Each environment has its own /tmp (TMPDIR) of the template's
// EphemeralStorage size, and its memory held to MemorySize: a warm
// environment keeps what it wrote there, a new one starts with an empty
// one, and an ended environment's is unmounted.
func TestLambdaTmpAndMemoryAreTheEnvironments(t *testing.T) {
	d := Deploy(t)
	f := d.Functions["planner"]
	empty := []byte(`{"request":{},"execution":"tmp-1"}`)
	invoke := func() {
		t.Helper()
		res, err := d.Lambdas.Invoke(t.Context(), f, empty)
		if err != nil {
			t.Fatal(err)
		}
		if errorTypeOf(t, res) != "RequestError" {
			t.Fatalf("an empty request: %s, want the handler's RequestError", res.Payload)
		}
	}
	invoke()
	pid := d.Lambdas.onlyPid(t, f)
	tmp := environOf(t, pid)["TMPDIR"]
	if tmp == "" || tmp == os.TempDir() {
		t.Fatalf("TMPDIR=%q: the environment has no /tmp of its own", tmp)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(tmp, &st); err != nil {
		t.Fatal(err)
	}
	if size := int64(st.Blocks) * st.Bsize; st.Type != tmpfsMagic || size != int64(f.EphemeralStorageMB)<<20 {
		t.Errorf("TMPDIR %s: filesystem 0x%x of %d bytes, want a tmpfs (0x%x) of the template's %d MB", tmp, st.Type, size, tmpfsMagic, f.EphemeralStorageMB)
	}
	if limit := memoryLimitOf(t, pid); limit != int64(f.MemoryMB)<<20 {
		t.Errorf("memory limit %d bytes, want the template's MemorySize %d MB", limit, f.MemoryMB)
	}
	left := filepath.Join(tmp, "left-by-an-invocation")
	if err := os.WriteFile(left, []byte("kept while warm"), 0o600); err != nil {
		t.Fatal(err)
	}
	invoke()
	if d.Lambdas.onlyPid(t, f) != pid {
		t.Fatalf("the second invocation did not run in the warm environment")
	}
	if _, err := os.Stat(left); err != nil {
		t.Errorf("a warm environment lost its /tmp: %v", err)
	}

	// The environment ends (as Lambda recycles one); the next starts afresh.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.Lambdas.waitExited(t, pid)
	invoke()
	var next int
	for _, p := range d.Lambdas.pids(f) {
		if p != pid {
			next = p
		}
	}
	fresh := environOf(t, next)["TMPDIR"]
	if entries, err := os.ReadDir(fresh); err != nil || fresh == tmp || len(entries) != 0 {
		t.Errorf("the new environment's /tmp %s (the old one's %s): %d entries, %v; want its own, empty", fresh, tmp, len(entries), err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ended environment's /tmp %s is still there (%v)", tmp, err)
	}
}

// tmpfsMagic is statfs's f_type of a tmpfs (linux/magic.h TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

// environOf is a process's environment (/proc/<pid>/environ).
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("reading the process environment: %v", err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// memoryLimitOf is the limit of the memory cgroup of its own
// (s3zip-lambda-…, limits_test.go) a process runs in.
func memoryLimitOf(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		id, controllers, path, _ := cutCgroupLine(line)
		if !strings.HasPrefix(filepath.Base(path), "s3zip-lambda-") {
			continue
		}
		files := []string{filepath.Join("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes")}
		if id == "0" && controllers == "" {
			files = []string{filepath.Join("/sys/fs/cgroup", path, "memory.max"), filepath.Join("/sys/fs/cgroup/unified", path, "memory.max")}
		}
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
				if err != nil {
					t.Fatalf("%s: %q: %v", file, b, err)
				}
				return n
			}
		}
	}
	t.Fatalf("process %d runs in no memory cgroup of its own:\n%s", pid, raw)
	return 0
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
