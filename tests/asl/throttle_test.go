package asl_test

// A throttled account: Lambda runs at most 10 invocations at once in a new
// AWS account and answers every one beyond with TooManyRequestsException,
// while the Distributed Maps start up to their MaxConcurrency children. The
// engine throttles the same way (RunOptions.LambdaConcurrency) and runs the
// ASL's own retry policy, 100 times faster (RunOptions.RetryScale); each
// batch holds its Lambda for slotHold, 100 s at that scale, as real workers
// hold theirs for minutes. The runs must finish on the ASL's retries alone.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

const (
	newAccountConcurrency = 10   // Lambda's concurrency in a new account
	throttleRetryScale    = 0.01 // the ASL's intervals: 1 s → 10 ms
	slotHold              = time.Second
	throttled             = "Lambda.TooManyRequestsException"
	// maxAttemptsBefore is the attempts a retry policy too short for a new
	// account allows a throttled invocation: a child waiting longer for a
	// free slot would fail the run.
	maxAttemptsBefore = 6
)

// concurrencyMeter counts the invocations that reach the functions at once.
type concurrencyMeter struct {
	next                       http.Handler
	mu                         sync.Mutex
	running, peak, invocations int
}

func (m *concurrencyMeter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/invoke/") {
		m.next.ServeHTTP(w, r)
		return
	}
	m.mu.Lock()
	m.running++
	m.invocations++
	m.peak = max(m.peak, m.running)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running--
		m.mu.Unlock()
	}()
	m.next.ServeHTTP(w, r)
}

// counts are the most invocations at once and their total so far.
func (m *concurrencyMeter) counts() (peak, invocations int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak, m.invocations
}

// holdSlot keeps an invocation running for slotHold before its handler runs.
func holdSlot(ctx context.Context) error {
	select {
	case <-time.After(slotHold):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkThrottled asserts that the account's limit held, that each of the
// Map states was throttled, and that some child waited through more
// throttled attempts than the ASL allowed before.
func checkThrottled(t *testing.T, out *Outcome, m *concurrencyMeter, mapStates ...string) {
	t.Helper()
	if peak, _ := m.counts(); peak > newAccountConcurrency {
		t.Errorf("%d invocations ran at once, above the account's %d: the engine did not throttle", peak, newAccountConcurrency)
	}
	for _, state := range mapStates {
		n := 0
		for _, ev := range events(out, "StateFailed", state) {
			if ev.Error == throttled {
				n++
			}
		}
		most := 0
		for _, ev := range events(out, "StateRetried", state) {
			if slices.Contains(ev.ErrorEquals, throttled) {
				most = max(most, ev.Attempt)
			}
		}
		if n == 0 || most <= maxAttemptsBefore {
			t.Errorf("%s: %d throttled invocations, at most %d retries of one child: the run was not throttled for longer than %d attempts", state, n, most, maxAttemptsBefore)
		}
		t.Logf("%s: %d throttled invocations, one child retried %d times", state, n, most)
	}
}

// sameContents compares what a run wrote, by name, with what it should have.
func sameContents(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d %s, want %d", len(got), what, len(want))
	}
	for name, body := range want {
		if !bytes.Equal(got[name], body) {
			t.Errorf("%s: %d bytes, want %d", name, len(got[name]), len(body))
		}
	}
}

// create, throttled: the read pass (digests) and BuildParts each start 20
// children at once in an account of 10; every one of them completes.
func TestASLThrottledAccountCreates(t *testing.T) {
	e := newEnv(t)
	for i := range 12 {
		key := fmt.Sprintf("in/many/%02d.bin", i)
		body := s3test.Bytes(uint64(100+i), 5*mib+i*1000)
		e.srv.PutObject(t, "src", key, body)
		e.want[key] = body
	}
	e.fns.Configure(func(c *create.Config) { c.MaxReadsPerBatch = 1 })
	hold := func(ctx context.Context, _ int, _ json.RawMessage) error { return holdSlot(ctx) }
	e.fns.SetFault("reader", hold)
	e.fns.SetFault("worker", hold)
	m := &concurrencyMeter{next: e.fns}
	url := serve(t, m)

	// stream: every part a 5 MiB upload part, so the archive's ~85 MiB make ~17 batches.
	req := json.RawMessage(`{"source":{"bucket":"src","prefix":"in/"},"destination":{"bucket":"dst","key":"out/throttled.zip"},` +
		`"options":{"strategy":"stream","partSize":5242880,"maxConcurrency":20,"digests":["sha256"]}}`)
	out := Execute(t, url, req,
		RunOptions{Execution: "exec-throttled", RetryScale: throttleRetryScale, LambdaConcurrency: newAccountConcurrency})
	peak, invocations := m.counts()
	t.Logf("execution: %s %s %s; %d invocations reached the functions, at most %d at once", out.Status, out.Error, trim(out.Cause, 400), invocations, peak)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, trim(out.Cause, 1000))
	}
	if n := len(e.fns.Calls("worker")); n <= newAccountConcurrency {
		t.Fatalf("%d worker batches: want more than the account's %d, or nothing is throttled", n, newAccountConcurrency)
	}
	checkThrottled(t, out, m, "ReadBatch", "BuildBatch")

	path := filepath.Join(t.TempDir(), "throttled.zip")
	e.srv.DownloadFile(t, "dst", "out/throttled.zip", path)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	got := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		got[f.Name], err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	want := map[string][]byte{}
	for key, body := range e.want {
		want[strings.TrimPrefix(key, "in/")] = body
	}
	sameContents(t, "archive entries", got, want)
	e.assertClean(t, "")
}

// extract, throttled: 24 entries, one per job (readGroup 1) and batch, 24 children at once in an
// account of 10; every object is written byte for byte.
func TestASLThrottledAccountExtracts(t *testing.T) {
	e := newExtractEnv(t)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	want := map[string][]byte{}
	for i := range 24 {
		name := fmt.Sprintf("many/%02d.txt", i)
		body := bytes.Repeat([]byte(name+" throttled but written\n"), 100+i)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(body)
		want[name] = body
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	e.srv.PutObject(t, "src", "in/many.zip", buf.Bytes())
	e.fns.mu.Lock()
	e.fns.cfg.BatchSize, e.fns.cfg.MaxConcurrency = 1, 24
	e.fns.mu.Unlock()
	e.fns.setFault("worker", func(int, []byte) error { return holdSlot(context.Background()) })
	m := &concurrencyMeter{next: e.fns}
	url := serve(t, m)

	t.Setenv("ASL_FILE", filepath.Join(repoRoot(t), "statemachine", "extract.asl.json"))
	out := Execute(t, url, json.RawMessage(`{"archive":{"bucket":"src","key":"in/many.zip"},"destination":{"bucket":"dst","prefix":"out/throttled/"},"options":{"readGroup":1}}`),
		RunOptions{Execution: "extract-throttled", RetryScale: throttleRetryScale, LambdaConcurrency: newAccountConcurrency})
	peak, invocations := m.counts()
	t.Logf("execution: %s %s %s; %d invocations reached the functions, at most %d at once", out.Status, out.Error, trim(out.Cause, 400), invocations, peak)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, trim(out.Cause, 1000))
	}
	checkThrottled(t, out, m, "RunBatch")
	got := e.objects(t, "out/throttled/")
	delete(got, extract.ReportName)
	sameContents(t, "objects written", got, want)
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}
