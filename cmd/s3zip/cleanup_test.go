package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// cliBinary builds the s3zip command for tests that run it as a process
// (signals); $S3ZIP_TEST_CLI names another build to run instead.
func cliBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("S3ZIP_TEST_CLI"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "s3zip")
	//lint:ignore SA1019 go test builds this binary here, so its GOROOT is the toolchain running the test
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go") // the toolchain running this test
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// slowWorld is a server whose sources take a chain of a few hundred rounds
// with one worker: long enough to stop a run in the middle.
func slowWorld(t *testing.T) *s3test.Server {
	srv := cliServer(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range 300 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			srv.PutObject(t, "src", fmt.Sprintf("p/%03d.txt", i), s3test.Bytes(uint64(i), 4096))
		}()
	}
	wg.Wait()
	srv.PutObject(t, "src", "p/big.bin", s3test.Bytes(1000, 6<<20))
	return srv
}

// cliRun is the command running as a process.
type cliRun struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
	stdout lockedBuffer
	done   chan struct{}
	err    error
}

// lockedBuffer is a bytes.Buffer a test may read while the process writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitStderr waits until the process has written want to stderr.
func (r *cliRun) waitStderr(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if strings.Contains(r.stderr.String(), want) {
			return
		}
	}
	t.Fatalf("stderr never said %q:\n%s", want, r.stderr.String())
}

func startCreate(t *testing.T, bin string, srv *s3test.Server, dest string) *cliRun {
	t.Helper()
	r := &cliRun{done: make(chan struct{})}
	r.cmd = exec.Command(bin, "create", "--source", "s3://src/p/", "--dest", dest, "--work-bucket", "work",
		"--strategy", "chain", "--workers", "1", "--batch", "1", "--endpoint", srv.Endpoint())
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done })
	return r
}

// waitMidRun waits until the run has planned, created the archive's upload
// and is building chains: the moment a kill leaves the most behind.
func (r *cliRun) waitMidRun(t *testing.T, srv *s3test.Server) {
	t.Helper()
	c := srv.Client(t)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			t.Fatalf("the run ended before it could be stopped: %v\n%s", r.err, r.stderr.String())
		default:
		}
		archive, err1 := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("dst")})
		rounds, err2 := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("work")})
		if err1 == nil && err2 == nil && len(archive.Uploads) > 0 && len(rounds.Uploads) > 0 && !strings.HasSuffix(aws.ToString(rounds.Uploads[0].Key), "crc-probe") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the run did not start building chains within a minute\n%s", r.stderr.String())
}

func (r *cliRun) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("the run did not stop within %s\n%s", limit, r.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 0
}

// SIGINT and SIGTERM stop a create cleanly: upload aborted, work removed,
// said in words, exit 128+signal.
func TestCreateInterrupted(t *testing.T) {
	bin := cliBinary(t)
	srv := slowWorld(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			r := startCreate(t, bin, srv, "s3://dst/out.zip")
			r.waitMidRun(t, srv)
			r.cmd.Process.Signal(tc.sig)
			code := r.wait(t, 60*time.Second)
			stderr := r.stderr.String()
			if code != tc.code || !strings.Contains(stderr, "s3zip: interrupted; upload aborted, work removed") || strings.Contains(stderr, "context canceled") {
				t.Errorf("exit %d, want %d, saying what was cleaned and not \"context canceled\"; stderr:\n%s", code, tc.code, stderr)
			}
			// Either signal stops the run: the progress line says so, not "failed".
			if !strings.Contains(stderr, " stopped at ") || strings.Contains(stderr, "failed") {
				t.Errorf("%s: the progress line should say the run stopped, not failed; stderr:\n%s", tc.sig, stderr)
			}
			for _, l := range srv.Leftovers(t, "work", "dst") {
				t.Errorf("left behind: %s", l)
			}
		})
	}
}

// A second Ctrl-C stops at once, without waiting for the clean-up, and says
// how to finish it.
func TestCreateInterruptedTwice(t *testing.T) {
	bin := cliBinary(t)
	srv := slowWorld(t)
	r := startCreate(t, bin, srv, "s3://dst/twice.zip")
	r.waitMidRun(t, srv)
	r.cmd.Process.Signal(syscall.SIGINT)
	// Two signals sent at once may arrive as one: the second goes once the
	// first is taken, while the clean-up runs.
	r.waitStderr(t, "interrupt again to stop at once")
	r.cmd.Process.Signal(syscall.SIGINT)
	code := r.wait(t, 10*time.Second)
	const said = "interrupted again; stopped before the clean-up finished; the next create for the same archive removes what is left, or now: "
	stderr := r.stderr.String()
	_, advice, ok := strings.Cut(stderr, said)
	if code != 130 || !ok {
		t.Fatalf("exit %d, want 130 and how to finish the clean-up; stderr:\n%s", code, stderr)
	}
	// Run as printed, with no S3_ENDPOINT to fall back on (cliServer clears it).
	advice, _, _ = strings.Cut(advice, "\n")
	words := shellWords(t, advice)
	want := []string{"s3zip", "cleanup", "s3://dst/twice.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}
	if !slices.Equal(words, want) {
		t.Errorf("advised %s\nwant %s", advice, shellCommand(want...))
	}
	var out bytes.Buffer
	if err := run(t.Context(), words[1:], &out); err != nil {
		t.Fatalf("cleanup as advised (%s): %v\n%s", advice, err, out.String())
	}
	for _, l := range srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind after cleanup: %s", l)
	}
}

// kill -9 leaves work objects and uploads; `s3zip cleanup` and the next
// create for the same archive find and remove them.
func TestKilledRunIsCleanedUp(t *testing.T) {
	bin := cliBinary(t)
	srv := slowWorld(t)
	kill := func(t *testing.T, dest string) {
		r := startCreate(t, bin, srv, dest)
		r.waitMidRun(t, srv)
		r.cmd.Process.Signal(syscall.SIGKILL)
		r.wait(t, 10*time.Second)
		left := srv.Leftovers(t, "work", "dst")
		if len(left) == 0 {
			t.Fatal("kill -9 left nothing behind: the test stops the run too late")
		}
		t.Logf("kill -9 left %d things, e.g. %s", len(left), left[0])
	}
	t.Run("cleanup-command", func(t *testing.T) {
		kill(t, "s3://dst/killed.zip")
		var out bytes.Buffer
		if err := run(t.Context(), []string{"cleanup", "s3://dst/killed.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
			t.Fatalf("cleanup: %v\n%s", err, out.String())
		}
		if !strings.Contains(out.String(), "has exited: dead; removed") || !strings.Contains(out.String(), "removed what 1 dead run left") {
			t.Errorf("cleanup printed:\n%s", out.String())
		}
		for _, l := range srv.Leftovers(t, "work", "dst") {
			t.Errorf("left behind after cleanup: %s", l)
		}
	})
	t.Run("next-create", func(t *testing.T) {
		kill(t, "s3://dst/again.zip")
		var out bytes.Buffer
		err := run(t.Context(), []string{"create", "--source", "s3://src/p/", "--dest", "s3://dst/again.zip", "--work-bucket", "work",
			"--strategy", "duo", "--endpoint", srv.Endpoint()}, &out)
		if err != nil {
			t.Fatalf("create after a killed run: %v\n%s", err, out.String())
		}
		left := srv.Leftovers(t, "work", "dst")
		if len(left) > 0 {
			t.Errorf("left behind after the next create: %q", left)
		}
	})
}

// Clean-up never touches a live run: not one whose process runs here, not
// one elsewhere whose heartbeat is fresh. A stale one elsewhere is removed.
func TestCleanupLeavesLiveRunsAlone(t *testing.T) {
	bin := cliBinary(t)
	srv := slowWorld(t)
	t.Run("process-running-here", func(t *testing.T) {
		r := startCreate(t, bin, srv, "s3://dst/live.zip")
		r.waitMidRun(t, srv)
		var out bytes.Buffer
		if err := run(t.Context(), []string{"cleanup", "s3://dst/live.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
			t.Fatalf("cleanup: %v", err)
		}
		if !strings.Contains(out.String(), "is running: live, left alone") {
			t.Errorf("cleanup printed:\n%s", out.String())
		}
		if code := r.wait(t, 120*time.Second); code != 0 {
			t.Fatalf("the live run failed after a cleanup (exit %d):\n%s", code, r.stderr.String())
		}
		for _, l := range srv.Leftovers(t, "work", "dst") {
			t.Errorf("left behind: %s", l)
		}
	})
	t.Run("heartbeat-from-elsewhere", func(t *testing.T) {
		c := srv.Client(t)
		m := runMarker{Execution: "local-elsewhere", Destination: "s3://dst/remote.zip", Started: time.Now(), Host: "other", PID: 1,
			Process: "linux boot 00000000-0000-0000-0000-000000000000 pid:[1] pid 1 start 1"}
		doc, _ := json.Marshal(m)
		srv.PutObject(t, "work", "s3zip-work/local-elsewhere/"+markerName, doc)
		srv.PutObject(t, "work", "s3zip-work/local-elsewhere/plan.json", []byte("{}"))
		cleanup := func() string {
			var out bytes.Buffer
			if err := run(t.Context(), []string{"cleanup", "s3://dst/remote.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
				t.Fatalf("cleanup: %v", err)
			}
			return out.String()
		}
		if out := cleanup(); !strings.Contains(out, "wrote its heartbeat") || !strings.Contains(out, "live, left alone") {
			t.Errorf("fresh heartbeat: cleanup printed:\n%s", out)
		}
		if _, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("work"), Key: aws.String("s3zip-work/local-elsewhere/plan.json")}); err != nil {
			t.Fatalf("a live run's work object was removed: %v", err)
		}
		defer func(d time.Duration) { staleAfter = d }(staleAfter)
		staleAfter = time.Second
		time.Sleep(3 * time.Second) // times are whole seconds: 1 s stale is surely past after 3
		if out := cleanup(); !strings.Contains(out, "no heartbeat") || !strings.Contains(out, "removed what 1 dead run left") {
			t.Errorf("stale heartbeat: cleanup printed:\n%s", out)
		}
		for _, l := range srv.Leftovers(t, "work", "dst") {
			t.Errorf("left behind: %s", l)
		}
	})
}

// A run that ends with work left under its prefix (its Abort failed, its
// clean-up was cut short) keeps its marker, marked ended, so that `s3zip
// cleanup` finds that work at once, even while the process that ran it lives
// on. A run that left nothing deletes its marker.
func TestEndedRunThatLeftWorkIsFoundByCleanup(t *testing.T) {
	srv := cliServer(t)
	for _, b := range []string{"dst", "work"} {
		srv.CreateBucket(t, b)
	}
	ctx, c := t.Context(), srv.Client(t)
	dest := create.Destination{Bucket: "dst", Key: "left.zip"}

	clean, err := startMarker(ctx, c, "work", newMarker("local-clean", dest.URI()))
	if err != nil {
		t.Fatal(err)
	}
	if err := clean.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if left := srv.Leftovers(t, "work", "dst"); len(left) > 0 {
		t.Fatalf("a run that left no work kept: %v", left)
	}

	lease, err := startMarker(ctx, c, "work", newMarker("local-left", dest.URI()))
	if err != nil {
		t.Fatal(err)
	}
	// What a read pass leaves: compressed copies and read results.
	srv.PutObject(t, "work", "s3zip-work/local-left/deflate/0.0", s3test.Bytes(1, 1000))
	srv.PutObject(t, "work", "s3zip-work/local-left/map/reads/run/SUCCEEDED_0.json", []byte("[]"))
	if err := lease.stop(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"cleanup", "s3://dst/left.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "left work behind: dead; removed") || !strings.Contains(out.String(), "removed what 1 dead run left") {
		t.Errorf("cleanup printed:\n%s", out.String())
	}
	for _, l := range srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind after cleanup: %s", l)
	}
}

// The clean-up command the CLI prints runs as printed: it names the work
// bucket and the endpoint the run used, and a shell reads every argument
// back whole, whatever the archive's key holds.
func TestCleanupCommand(t *testing.T) {
	for _, tc := range []struct {
		name, workBucket, endpoint string
		archive                    create.Destination
		want                       []string
	}{
		{"aws-same-bucket", "dst", "", create.Destination{Bucket: "dst", Key: "out.zip"},
			[]string{"s3zip", "cleanup", "s3://dst/out.zip"}},
		{"work-bucket", "work", "", create.Destination{Bucket: "dst", Key: "out.zip"},
			[]string{"s3zip", "cleanup", "s3://dst/out.zip", "--work-bucket", "work"}},
		{"endpoint", "dst", "http://127.0.0.1:7070", create.Destination{Bucket: "dst", Key: "out.zip"},
			[]string{"s3zip", "cleanup", "s3://dst/out.zip", "--endpoint", "http://127.0.0.1:7070"}},
		{"key-with-shell-characters", "work", "http://[::1]:7070/s3?x=1&y=2", create.Destination{Bucket: "dst", Key: "my photos/it's $HOME; *.zip"},
			[]string{"s3zip", "cleanup", "s3://dst/my photos/it's $HOME; *.zip", "--work-bucket", "work", "--endpoint", "http://[::1]:7070/s3?x=1&y=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := cleanupCommand(tc.archive, tc.workBucket, tc.endpoint)
			if got := shellWords(t, line); !slices.Equal(got, tc.want) {
				t.Errorf("printed %s\na shell reads %q, want %q", line, got, tc.want)
			}
		})
	}
}

// shellWords is the words a POSIX shell splits line into.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `printf '%s\0' `+line).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// heldExtract is `s3zip extract` running as a process through a proxy that
// holds every CompleteMultipartUpload for hold (then drops it), caught in
// the middle: a copy's upload open and a read entry written (out/small.txt).
type heldExtract struct {
	*cliRun
	srv     *s3test.Server
	proxy   *fp.Proxy
	archive []byte
}

func startHeldExtract(t *testing.T, hold time.Duration) heldExtract {
	t.Helper()
	bin := cliBinary(t)
	srv := cliServer(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range []struct {
		name   string
		method uint16
		body   []byte
	}{
		{"big1.bin", zip.Store, s3test.Bytes(1, 3<<20)}, // the archive over 5 MiB, so its entries can be copied by range
		{"big2.bin", zip.Store, s3test.Bytes(2, 3<<20+5)},
		{"small.txt", zip.Deflate, bytes.Repeat([]byte("small and deflated\n"), 100)},
	} {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(e.body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	srv.PutObject(t, "src", "a.zip", buf.Bytes())
	p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Rules: []fp.Rule{{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.Timeout}, Rate: 1}}, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	r := &cliRun{done: make(chan struct{})}
	r.cmd = exec.Command(bin, "extract", "s3://src/a.zip", "s3://dst/out/", "--work-bucket", "work", "--small-stored", "1048576", "--workers", "4", "--endpoint", p.URL())
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done })
	c := srv.Client(t)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the extraction never had an upload open and an object written\n%s", r.stderr.String())
		}
		ups, err1 := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("dst")})
		_, err2 := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/small.txt")})
		if err1 == nil && err2 == nil && len(ups.Uploads) > 0 {
			break
		}
	}
	return heldExtract{cliRun: r, srv: srv, proxy: p, archive: buf.Bytes()}
}

// TestKilledExtractIsCleanedUp: kill -9 during `s3zip extract` leaves its
// job files, an open multipart upload and objects it wrote; `s3zip cleanup`
// of the archive finds that run, removes all of it and says what it removed.
// A proxy holds every CompleteMultipartUpload, so the run is surely in the
// middle (a copy's upload open, a read entry written) when it is killed.
func TestKilledExtractIsCleanedUp(t *testing.T) {
	h := startHeldExtract(t, 2*time.Minute)
	r, srv, buf := h.cliRun, h.srv, bytes.NewBuffer(h.archive)
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.wait(t, 10*time.Second)
	left := srv.Leftovers(t, "work", "dst")
	if len(left) == 0 {
		t.Fatal("kill -9 left nothing behind: the test stops the run too late")
	}
	t.Logf("kill -9 left: %s", strings.Join(left, "; "))

	// Looked for in the archive's bucket, the run is not found: cleanup says
	// where else it may be.
	var elsewhere bytes.Buffer
	if err := run(t.Context(), []string{"cleanup", "s3://src/a.zip", "--endpoint", srv.Endpoint()}, &elsewhere); err != nil {
		t.Fatalf("cleanup without --work-bucket: %v\n%s", err, elsewhere.String())
	}
	if !strings.Contains(elsewhere.String(), "no run of s3zip") || !strings.Contains(elsewhere.String(), "--work-bucket BUCKET") {
		t.Errorf("cleanup in the wrong bucket printed %q: want it to say the run may keep its work elsewhere (--work-bucket)", elsewhere.String())
	}

	var out bytes.Buffer
	if err := run(t.Context(), []string{"cleanup", "s3://src/a.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out.String())
	}
	t.Logf("cleanup printed:\n%s", out.String())
	for _, want := range []string{"extract of s3://src/a.zip into s3://dst/out/", "has exited: dead; removed", "1 extracted object", "removed what 1 dead run left"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("cleanup's report does not say %q", want)
		}
	}
	for _, l := range srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind after cleanup: %s", l)
	}
	for _, k := range srv.Keys(t, "dst", "out/") {
		t.Errorf("extracted object left after cleanup: %s", k)
	}
	if b := srv.GetObject(t, "src", "a.zip"); !bytes.Equal(b, buf.Bytes()) {
		t.Error(fmt.Errorf("the archive changed"))
	}
}

// An interrupted extract undoes what it wrote (the Abort runs, as a failure's
// does), says it stopped, not failed, and says what it left: nothing. The
// Complete it waits on is dropped after a second, as a stalled one would be.
func TestExtractInterrupted(t *testing.T) {
	h := startHeldExtract(t, time.Second)
	h.cmd.Process.Signal(syscall.SIGINT)
	code := h.wait(t, 60*time.Second)
	stderr := h.stderr.String()
	if code != 130 || !strings.Contains(stderr, "s3zip: interrupted; nothing it wrote under s3://dst/out/ is left, work removed") || strings.Contains(stderr, "failed") {
		t.Errorf("exit %d, want 130, saying it stopped and left nothing; stderr:\n%s", code, stderr)
	}
	for _, l := range h.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
	if keys := h.srv.Keys(t, "dst", "out/"); len(keys) > 0 {
		t.Errorf("extracted objects left: %q", keys)
	}
}

// A second Ctrl-C stops an extract at once, its clean-up held, and prints
// the clean-up that finishes it; run as printed, it removes everything.
func TestExtractInterruptedTwice(t *testing.T) {
	h := startHeldExtract(t, 2*time.Minute)
	h.proxy.SetRules([]fp.Rule{{Faults: []fp.Fault{fp.Timeout}, Rate: 1}}) // the clean-up hangs
	h.cmd.Process.Signal(syscall.SIGINT)
	h.waitStderr(t, "interrupt again to stop at once")
	h.cmd.Process.Signal(syscall.SIGINT)
	code := h.wait(t, 10*time.Second)
	const said = "interrupted again; stopped before the clean-up finished; remove what is left with: "
	stderr := h.stderr.String()
	_, advice, ok := strings.Cut(stderr, said)
	if code != 130 || !ok {
		t.Fatalf("exit %d, want 130 and how to finish the clean-up; stderr:\n%s", code, stderr)
	}
	h.proxy.SetRules(nil)
	advice, _, _ = strings.Cut(advice, "\n")
	words := shellWords(t, advice)
	if want := []string{"s3zip", "cleanup", "s3://src/a.zip", "--work-bucket", "work", "--endpoint", h.proxy.URL()}; !slices.Equal(words, want) {
		t.Errorf("advised %s\nwant %s", advice, shellCommand(want...))
	}
	var out bytes.Buffer
	if err := run(t.Context(), words[1:], &out); err != nil {
		t.Fatalf("cleanup as advised (%s): %v\n%s", advice, err, out.String())
	}
	for _, l := range h.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind after cleanup: %s", l)
	}
	if keys := h.srv.Keys(t, "dst", "out/"); len(keys) > 0 {
		t.Errorf("extracted objects left after cleanup: %q", keys)
	}
}
