package deployed_test

// A Lambda service for the packaged bootstrap binaries: each execution
// environment is one bootstrap process speaking the Lambda Runtime API
// (2018-06-01) to its own small server here. The AWS Runtime Interface
// Emulator could not be installed (the Go proxy refuses its module), so this
// harness implements the part of the Runtime API the Go runtime uses:
//
//	GET  /2018-06-01/runtime/invocation/next        the next event, with Lambda-Runtime-Aws-Request-Id,
//	                                                 -Deadline-Ms, -Invoked-Function-Arn, -Trace-Id
//	POST /2018-06-01/runtime/invocation/{id}/response
//	POST /2018-06-01/runtime/invocation/{id}/error   the error document ({"errorType","errorMessage"})
//	POST /2018-06-01/runtime/init/error              the function failed to start
//
// One invocation per environment at a time; a function scales out by starting
// more environments (at most maxEnvironments each). An invocation that runs
// past the template's Timeout is killed with its process (as Lambda does) and
// answered {"errorType":"Sandbox.Timedout"}; a process that exits mid-invoke
// is Runtime.ExitError. Each environment has its own /tmp of the template's
// EphemeralStorage size and its memory held to MemorySize (limits_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const maxEnvironments = 8

// Result is what Lambda's Invoke API answers: the payload and, for a
// function error, X-Amz-Function-Error ("Unhandled").
type Result struct {
	Payload       []byte
	FunctionError string
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan Result
}

// sandbox is one execution environment: a bootstrap process and its Runtime API.
type sandbox struct {
	fn     *LambdaFunction
	srv    *http.Server
	cmd    *exec.Cmd
	next   chan *invocation
	exited chan struct{}
	mu     sync.Mutex
	cur    *invocation
	log    bytes.Buffer
	// released is what releasing its limits (its /tmp, its memory cgroup)
	// returned once the process exited; read after exited is closed.
	released error
}

// LambdaFunction is one function of the template, runnable here.
type LambdaFunction struct {
	Function
	Token      string            // the session token of its role's credentials
	ExtraEnv   map[string]string // what a local run adds (S3_ENDPOINT), listed in the report
	accessKey  string
	secretKey  string
	idle       chan *sandbox
	mu         sync.Mutex
	count      int
	Invocation int
	// Timeouts and Starts count what happened, for tests.
	Timeouts, Starts int
	// Longest is the longest invocation so far, against TimeoutSeconds.
	Longest time.Duration
	results []Result // each invocation's, in the order they ended
}

// Stats returns how many invocations, environment starts and timeouts the
// function has had (under its lock: the invocations run on server goroutines).
func (f *LambdaFunction) Stats() (invocations, starts, timeouts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Invocation, f.Starts, f.Timeouts
}

// Results returns what the function's invocations answered (payload, and
// FunctionError for an error), in the order they ended.
func (f *LambdaFunction) Results() []Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Result(nil), f.results...)
}

// Lambdas serves the functions' invocations.
type Lambdas struct {
	t     *testing.T
	byArn map[string]*LambdaFunction
	mu    sync.Mutex
	all   []*sandbox
	seq   int
}

func NewLambdas(t *testing.T, fns []*LambdaFunction, accessKey, secretKey string) *Lambdas {
	// Said once here, not as a ServiceException at each invocation.
	probe, err := newTmp("an environment", 1)
	if err == nil {
		err = probe.release()
	}
	if err == nil {
		_, _, err = memoryCgroupParent()
	}
	if err != nil {
		t.Fatalf("the Lambda environments cannot have Lambda's limits here: %v", err)
	}
	l := &Lambdas{t: t, byArn: map[string]*LambdaFunction{}}
	for _, f := range fns {
		f.accessKey, f.secretKey = accessKey, secretKey
		f.idle = make(chan *sandbox, maxEnvironments)
		l.byArn[f.Arn] = f
		l.byArn[f.Name] = f
	}
	t.Cleanup(l.close)
	return l
}

// close ends every environment and waits for each to be released (its
// /tmp unmounted, its cgroup removed).
func (l *Lambdas) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.all {
		s.kill()
		_ = s.srv.Close()
	}
	for _, s := range l.all {
		select {
		case <-s.exited:
			if s.released != nil {
				l.t.Errorf("releasing an environment of %s: %v", s.fn.Name, s.released)
			}
		case <-time.After(10 * time.Second):
			l.t.Errorf("an environment of %s (pid %d) still runs 10 s after SIGKILL", s.fn.Name, s.cmd.Process.Pid)
		}
	}
}

// Function returns the function with this ARN or name.
func (l *Lambdas) Function(nameOrArn string) *LambdaFunction {
	// Qualified ARNs (…:function:name:$LATEST) name the same function.
	if f, ok := l.byArn[nameOrArn]; ok {
		return f
	}
	if i := strings.LastIndex(nameOrArn, ":"); i > 0 {
		return l.byArn[nameOrArn[:i]]
	}
	return nil
}

// Invoke runs one RequestResponse invocation.
func (l *Lambdas) Invoke(ctx context.Context, f *LambdaFunction, payload []byte) (Result, error) {
	s, err := l.acquire(ctx, f)
	if err != nil {
		return Result{}, err
	}
	l.mu.Lock()
	l.seq++
	id := fmt.Sprintf("%08d-0000-4000-8000-%012d", l.seq, l.seq)
	l.mu.Unlock()
	inv := &invocation{id: id, payload: payload, deadline: time.Now().Add(time.Duration(f.TimeoutSeconds) * time.Second), done: make(chan Result, 1)}
	f.mu.Lock()
	f.Invocation++
	f.mu.Unlock()
	started := time.Now()
	defer func() {
		f.mu.Lock()
		f.Longest = max(f.Longest, time.Since(started))
		f.mu.Unlock()
	}()
	s.next <- inv
	timer := time.NewTimer(time.Until(inv.deadline))
	defer timer.Stop()
	var res Result
	healthy := true
	select {
	case res = <-inv.done:
	case <-s.exited:
		// The process died while the invocation ran (a crash, os.Exit).
		select {
		case res = <-inv.done:
		default:
			res = errorResult("Runtime.ExitError", fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %v", id, s.cmd.ProcessState))
			healthy = false
		}
	case <-timer.C:
		s.kill()
		f.mu.Lock()
		f.Timeouts++
		f.mu.Unlock()
		res = errorResult("Sandbox.Timedout", fmt.Sprintf("RequestId: %s Error: Task timed out after %d.00 seconds", id, f.TimeoutSeconds))
		healthy = false
	case <-ctx.Done():
		s.kill()
		healthy = false
		res = errorResult("Sandbox.Timedout", "the harness cancelled the invocation")
	}
	if healthy {
		select {
		case <-s.exited:
			healthy = false
		default:
		}
	}
	f.mu.Lock()
	f.results = append(f.results, res)
	f.mu.Unlock()
	if healthy {
		f.idle <- s
	} else {
		f.mu.Lock()
		f.count--
		f.mu.Unlock()
	}
	return res, nil
}

// acquire returns an idle environment of f, or starts one while f has fewer
// than maxEnvironments, or waits for one to be free. An idle environment
// whose process has died is dropped, as Lambda replaces it.
func (l *Lambdas) acquire(ctx context.Context, f *LambdaFunction) (*sandbox, error) {
	for {
		select {
		case s := <-f.idle:
			select {
			case <-s.exited:
				f.mu.Lock()
				f.count--
				f.mu.Unlock()
				continue
			default:
				return s, nil
			}
		default:
		}
		f.mu.Lock()
		canStart := f.count < maxEnvironments
		if canStart {
			f.count++
		}
		f.mu.Unlock()
		if canStart {
			s, err := l.start(f)
			if err != nil {
				f.mu.Lock()
				f.count--
				f.mu.Unlock()
			}
			return s, err
		}
		select {
		case s := <-f.idle:
			f.idle <- s // re-examined at the top of the loop
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func errorResult(typ, msg string) Result {
	doc, _ := json.Marshal(map[string]string{"errorType": typ, "errorMessage": msg})
	return Result{Payload: doc, FunctionError: "Unhandled"}
}

// start launches one execution environment: its Runtime API server and the
// bootstrap with the template's environment plus what Lambda sets itself.
func (l *Lambdas) start(f *LambdaFunction) (*sandbox, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lim, err := newTmp(f.Name, f.EphemeralStorageMB)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s := &sandbox{fn: f, next: make(chan *invocation, 1), exited: make(chan struct{})}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()

	env := []string{
		"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(),
		"AWS_REGION=" + region, "AWS_DEFAULT_REGION=" + region,
		"AWS_LAMBDA_FUNCTION_NAME=" + f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d", f.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + f.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME=local",
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"_HANDLER=" + f.Handler,
		"LAMBDA_TASK_ROOT=" + filepath.Dir(f.Bootstrap),
		"TZ=:UTC", "LANG=en_US.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin",
		"AWS_ACCESS_KEY_ID=" + f.accessKey,
		"AWS_SECRET_ACCESS_KEY=" + f.secretKey,
		"AWS_SESSION_TOKEN=" + f.Token,
		// Lambda's /tmp is /tmp; here each environment's is its own mount.
		"TMPDIR=" + lim.tmp,
	}
	for k, v := range f.Env {
		env = append(env, k+"="+v)
	}
	for k, v := range f.ExtraEnv {
		env = append(env, k+"="+v)
	}
	s.cmd = exec.Command(f.Bootstrap)
	s.cmd.Dir = filepath.Dir(f.Bootstrap)
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = &lockedWriter{s: s}, &lockedWriter{s: s}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		_ = s.srv.Close()
		return nil, errors.Join(fmt.Errorf("start %s (%s): %w", f.Name, f.Bootstrap, err), lim.release())
	}
	if err := lim.limitMemory(f.Name, s.cmd.Process.Pid, f.MemoryMB); err != nil {
		s.kill()
		_ = s.cmd.Wait()
		_ = s.srv.Close()
		return nil, errors.Join(err, lim.release())
	}
	f.mu.Lock()
	f.Starts++
	f.mu.Unlock()
	go func() {
		_ = s.cmd.Wait()
		s.released = lim.release()
		close(s.exited)
	}()
	l.mu.Lock()
	l.all = append(l.all, s)
	l.mu.Unlock()
	return s, nil
}

type lockedWriter struct{ s *sandbox }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if os.Getenv("DEPLOYED_LAMBDA_LOGS") != "" {
		fmt.Fprintf(os.Stderr, "[%s] %s", w.s.fn.Name, b)
	}
	if w.s.log.Len() < 1<<20 {
		w.s.log.Write(b)
	}
	return len(b), nil
}

func (s *sandbox) kill() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// ServeHTTP is the Runtime API of this environment.
func (s *sandbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/2018-06-01/runtime/"
	path := strings.TrimPrefix(r.URL.Path, base)
	switch {
	case r.Method == http.MethodGet && path == "invocation/next":
		var inv *invocation
		select {
		case inv = <-s.next:
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
		s.cur = inv
		s.mu.Unlock()
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(inv.deadline.UnixMilli()))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", s.fn.Arn)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(inv.payload)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "invocation/"):
		rest := strings.TrimPrefix(path, "invocation/")
		id, kind, _ := strings.Cut(rest, "/")
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		inv := s.cur
		if inv != nil && inv.id == id {
			s.cur = nil
		}
		s.mu.Unlock()
		if inv == nil || inv.id != id {
			http.Error(w, `{"errorType":"InvalidRequestID","errorMessage":"unknown request id"}`, http.StatusBadRequest)
			return
		}
		switch kind {
		case "response":
			inv.done <- Result{Payload: body}
		case "error":
			inv.done <- Result{Payload: body, FunctionError: "Unhandled"}
		default:
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"OK"}`))
	case r.Method == http.MethodPost && path == "init/error":
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		fmt.Fprintf(&s.log, "init error: %s\n", body)
		s.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		s.kill()
	default:
		http.NotFound(w, r)
	}
}

// Logs returns what the function's environments printed (for failure reports).
func (l *Lambdas) Logs(f *LambdaFunction) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, s := range l.all {
		if s.fn == f {
			s.mu.Lock()
			b.Write(s.log.Bytes())
			s.mu.Unlock()
		}
	}
	return b.String()
}

// PeakRSS is the largest peak resident set of f's execution environments so
// far (what Lambda reports as "Max Memory Used"): VmHWM of a live process, the
// rusage maxrss of one that has exited. processes is how many it looked at.
func (l *Lambdas) PeakRSS(f *LambdaFunction) (peak uint64, processes int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.all {
		if s.fn != f || s.cmd.Process == nil {
			continue
		}
		var rss uint64
		select {
		case <-s.exited:
			ru, ok := s.cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if !ok {
				return 0, processes, fmt.Errorf("%s (pid %d): no rusage after exit", f.Name, s.cmd.Process.Pid)
			}
			rss = uint64(ru.Maxrss) << 10 // KiB on Linux
		default:
			if rss, err = vmHWM(s.cmd.Process.Pid); err != nil {
				return 0, processes, fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		peak = max(peak, rss)
		processes++
	}
	return peak, processes, nil
}

// vmHWM is a live process's peak resident set (/proc/<pid>/status).
func vmHWM(pid int) (uint64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var n uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(kb), "%d kB", &n); err != nil {
				return 0, fmt.Errorf("pid %d: VmHWM %q: %v", pid, kb, err)
			}
			return n << 10, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no VmHWM in /proc/%d/status", pid, pid)
}

// pids are the process ids of f's environments started so far, live or not.
func (l *Lambdas) pids(f *LambdaFunction) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pids []int
	for _, s := range l.all {
		if s.fn == f {
			pids = append(pids, s.cmd.Process.Pid)
		}
	}
	return pids
}

// onlyPid is the process id of f's one environment, failing the test when
// f has had more than one.
func (l *Lambdas) onlyPid(t *testing.T, f *LambdaFunction) int {
	t.Helper()
	pids := l.pids(f)
	if len(pids) != 1 {
		t.Fatalf("%s has had %d environments, want the one its first invocation started", f.Name, len(pids))
	}
	return pids[0]
}

// waitExited waits until the environment of process pid has exited and been
// released.
func (l *Lambdas) waitExited(t *testing.T, pid int) {
	t.Helper()
	l.mu.Lock()
	var exited chan struct{}
	for _, s := range l.all {
		if s.cmd.Process.Pid == pid {
			exited = s.exited
		}
	}
	l.mu.Unlock()
	if exited == nil {
		t.Fatalf("no environment has process %d", pid)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the environment of process %d still runs 10 s after SIGKILL", pid)
	}
}
