// Package asl_test runs the real statemachine/archive.asl.json with
// aws-local-stepfunctions (execute.ts), its Lambda tasks served by the Go
// handlers and its Distributed Map emulated by the adapter (README.md), against
// versitygw on loopback.
package asl_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/stepfn"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

const mib = 1 << 20

type env struct {
	srv  *s3test.Server
	s3   *s3.Client
	fns  *Functions
	url  string
	want map[string][]byte // source key → bytes
}

// newEnv starts versitygw with buckets src, dst and work, stores the sources
// (half with a CRC32, half without) and serves the handlers.
func newEnv(t *testing.T) *env {
	t.Helper()
	srv := s3test.Start(t)
	e := &env{srv: srv, s3: srv.Client(t), want: map[string][]byte{}}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	objects := []struct {
		key      string
		size     int
		checksum s3test.Checksum
	}{
		{"in/small/a.txt", 1000, s3test.ChecksumCRC32},
		{"in/small/empty", 0, s3test.ChecksumNone},
		{"in/big/b.bin", 6*mib + 123, s3test.ChecksumNone},
		{"in/mid.bin", 3 * mib, s3test.ChecksumCRC32},
		{"in/big/c.bin", 7 * mib, s3test.ChecksumNone},
		{"in/ünïcode/名前.txt", 4*mib + 5, s3test.ChecksumCRC32},
	}
	rng := rand.NewChaCha8([32]byte{7})
	for _, o := range objects {
		body := make([]byte, o.size)
		_, _ = rng.Read(body)
		srv.PutObject(t, "src", o.key, body, s3test.WithChecksum(o.checksum))
		e.want[o.key] = body
	}
	e.fns = &Functions{S3: e.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 1}}
	e.url = e.fns.Serve(t)
	return e
}

func request(dest string, extra string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":{"bucket":"src","prefix":"in/"},"destination":{"bucket":"dst","key":%q},"options":{"strategy":"duo","partSize":5242880%s}}`, dest, extra))
}

func (e *env) execute(t *testing.T, req json.RawMessage, execution string) *Outcome {
	t.Helper()
	out := Execute(t, e.url, req, RunOptions{Execution: execution})
	t.Logf("execution %s: %s %s %s", execution, out.Status, out.Error, trim(out.Cause, 300))
	for _, c := range e.fns.Calls("") {
		t.Logf("  %s #%d: errorType=%q err=%v", c.Function, c.Attempt, c.ErrorType, c.Err)
	}
	return out
}

// checkArchive reads the archive with every ZIP reader and compares its entries with the sources.
func (e *env) checkArchive(t *testing.T, key string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.zip")
	e.srv.DownloadFile(t, "dst", key, path)
	var want []zipcheck.Want
	for k, body := range e.want {
		want = append(want, zipcheck.WantBytes(strings.TrimPrefix(k, "in/"), body))
	}
	zipcheck.Check(t, path, want)
}

// assertClean: no work objects, no multipart uploads, and (when archive is
// set) no object at the destination key.
func (e *env) assertClean(t *testing.T, archive string) {
	t.Helper()
	ctx := context.Background()
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
	if archive != "" {
		if _, err := e.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String(archive)}); err == nil {
			t.Errorf("an archive was left at s3://dst/%s", archive)
		}
	}
}

func events(out *Outcome, typ, state string) []Event {
	var evs []Event
	for _, ev := range out.Events {
		if ev.Type == typ && ev.State == state {
			evs = append(evs, ev)
		}
	}
	return evs
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// (1) The whole state machine: plan, Distributed Map of worker batches, finalize.
func TestASLBuildsValidArchive(t *testing.T) {
	e := newEnv(t)
	out := e.execute(t, request("out/a.zip", ""), "exec-ok")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	var res create.FinalizeOutput
	if err := json.Unmarshal(out.Output, &res); err != nil {
		t.Fatalf("execution output %s: %v", out.Output, err)
	}
	if res.Archive.URI != "s3://dst/out/a.zip" || res.Archive.Size == 0 || res.Stats.CopyParts == 0 {
		t.Errorf("execution output: %s", out.Output)
	}
	if n := len(e.fns.Calls("worker")); n < 2 {
		t.Errorf("worker invoked %d times; the plan's parts should make several batches", n)
	}
	if n := len(e.fns.Calls("abort")); n != 0 {
		t.Errorf("abort invoked %d times on a successful run", n)
	}
	// Nothing to read (compression none, no digests): exactly the states
	// there were before the read pass existed, and no reader invocation.
	if got, want := topLevelStates(out), []string{"PlanArchive", "HasWorkerParts", "BuildParts", "FinalizeArchive", "ArchiveCreated"}; !slices.Equal(got, want) {
		t.Errorf("states entered: %v, want %v (no read-pass state)", got, want)
	}
	if n := len(e.fns.Calls("reader")); n != 0 {
		t.Errorf("reader invoked %d times for an uncompressed archive", n)
	}
	if n := len(e.fns.Calls("planner")); n != 1 {
		t.Errorf("planner invoked %d times, want 1", n)
	}
	e.checkArchive(t, "out/a.zip")
	e.assertClean(t, "")
}

// topLevelStates lists the states the execution entered, in order, outside
// the Maps' child executions.
func topLevelStates(out *Outcome) []string {
	var states []string
	for _, ev := range out.Events {
		if ev.Type == "StateEntered" && ev.Child == "" {
			states = append(states, ev.State)
		}
	}
	return states
}

// (2) A worker's TransientError is retried by BuildBatch's Retry policy in the ASL.
func TestASLRetriesTransientWorkerError(t *testing.T) {
	e := newEnv(t)
	e.fns.SetFault("worker", func(_ context.Context, attempt int, _ json.RawMessage) error {
		if attempt == 1 {
			return &stepfn.TransientError{Op: "UploadPart s3://dst/out/a.zip (injected)", Err: errors.New("503 SlowDown")}
		}
		return nil
	})
	out := e.execute(t, request("out/a.zip", `,"maxConcurrency":1`), "exec-retry")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	calls := e.fns.Calls("worker")
	batches := 0
	for _, c := range calls {
		if c.Err == nil {
			batches++
		}
	}
	if len(calls) != batches+1 || calls[0].ErrorType != "TransientError" {
		t.Errorf("worker invocations: %d (%d succeeded), first %q; want one failed TransientError then every batch once", len(calls), batches, calls[0].ErrorType)
	}
	retried := events(out, "StateRetried", "BuildBatch")
	if len(retried) != 1 || !slices.Contains(retried[0].ErrorEquals, "TransientError") {
		t.Errorf("BuildBatch retries: %+v; want one, by the retrier matching TransientError", retried)
	}
	e.checkArchive(t, "out/a.zip")
	e.assertClean(t, "")
}

// (3a) A source overwritten between planning and building: the worker fails
// with SourceChangedError (not retried); BuildBatch's Catch ends the child
// with the refusal, so the Map Run succeeds (a failed Map Run is kept for
// Redrive, and this cannot heal); FinalizeArchive fails with the batch's own
// error, its Catch routes to Abort, which aborts the upload and deletes the
// work prefix (the Map's results included).
func TestASLAbortsWhenSourceChanged(t *testing.T) {
	e := newEnv(t)
	e.fns.SetFault("worker", func(_ context.Context, attempt int, _ json.RawMessage) error {
		if attempt == 1 {
			e.srv.PutObject(t, "src", "in/big/c.bin", make([]byte, 7*mib))
			e.srv.PutObject(t, "src", "in/mid.bin", make([]byte, 3*mib))
		}
		return nil
	})
	out := e.execute(t, request("out/a.zip", `,"maxConcurrency":1`), "exec-changed")
	if out.Status != "FAILED" {
		t.Fatalf("execution %s, want FAILED", out.Status)
	}
	if out.Error != "SourceChangedError" {
		t.Errorf("execution error %q, want SourceChangedError (the refused batch's error, reported by the finalizer)", out.Error)
	}
	if !strings.Contains(out.Cause, "changed or was deleted after planning") {
		t.Errorf("execution cause does not carry the worker's error: %s", out.Cause)
	}
	var changed []Invocation
	for _, c := range e.fns.Calls("worker") {
		var sc *failure.SourceChangedError
		if errors.As(c.Err, &sc) {
			changed = append(changed, c)
		}
	}
	if len(changed) != 1 {
		t.Errorf("%d worker invocations failed with SourceChangedError; want exactly 1 (it must not be retried)", len(changed))
	} else if changed[0].ErrorType != "SourceChangedError" {
		t.Errorf("the worker's SourceChangedError is reported as errorType %q", changed[0].ErrorType)
	}
	if caught := events(out, "StateCaught", "FinalizeArchive"); len(caught) != 1 {
		t.Errorf("FinalizeArchive Catch events: %+v; want the refused batch's error caught there", caught)
	}
	if n := len(e.fns.Calls("abort")); n != 1 {
		t.Errorf("abort invoked %d times, want 1", n)
	}
	if calls := e.fns.Calls("finalizer"); len(calls) != 1 || calls[0].ErrorType != "SourceChangedError" {
		t.Errorf("finalizer invocations %+v; want one, failing with the refused batch's SourceChangedError (not retried)", calls)
	}
	e.assertClean(t, "out/a.zip")
}

// (3b) A non-retryable finalizer error after every part was built: Catch →
// Abort → Fail with the original error type.
func TestASLAbortsOnFinalizerError(t *testing.T) {
	e := newEnv(t)
	e.fns.SetFault("finalizer", func(context.Context, int, json.RawMessage) error {
		return &failure.ChecksumMismatchError{Msg: "injected: archive CRC-32 differs from the plan's"}
	})
	out := e.execute(t, request("out/a.zip", ""), "exec-final")
	if out.Status != "FAILED" || out.Error != "ChecksumMismatchError" {
		t.Fatalf("execution %s %q, want FAILED ChecksumMismatchError", out.Status, out.Error)
	}
	if !strings.Contains(out.Cause, "injected: archive CRC-32") {
		t.Errorf("execution cause: %s", out.Cause)
	}
	if n := len(e.fns.Calls("finalizer")); n != 1 {
		t.Errorf("finalizer invoked %d times; ChecksumMismatchError must not be retried", n)
	}
	if n := len(e.fns.Calls("abort")); n != 1 {
		t.Errorf("abort invoked %d times, want 1", n)
	}
	e.assertClean(t, "out/a.zip")
}

// (3c) A planner error (the real handler's DestinationExistsError) goes
// through Abort and ends the execution with its own type.
func TestASLPlannerErrorFailsWithItsType(t *testing.T) {
	e := newEnv(t)
	e.srv.PutObject(t, "dst", "existing.zip", []byte("not ours"))
	out := e.execute(t, request("existing.zip", ""), "exec-exists")
	if out.Status != "FAILED" || out.Error != "DestinationExistsError" {
		t.Fatalf("execution %s %q, want FAILED DestinationExistsError", out.Status, out.Error)
	}
	if n := len(e.fns.Calls("abort")); n != 1 {
		t.Errorf("abort invoked %d times, want 1", n)
	}
	if got := string(e.srv.GetObject(t, "dst", "existing.zip")); got != "not ours" {
		t.Errorf("the existing destination object was changed: %q", got)
	}
	e.assertClean(t, "")
}

// (4) The read pass as deployed: a compressed archive with SHA256SUMS goes
// PlanArchive → ReadEntries (reader batches) → PlanLayout → BuildParts →
// FinalizeArchive. Text compresses (one entry cut into many pieces and
// joined), random bytes stay STORED; every ZIP reader reads the archive and
// the extracted files pass `sha256sum -c`.
func TestASLCompressesWithChecksums(t *testing.T) {
	e := newEnv(t)
	text := func(seed uint64, n int) []byte {
		rng := rand.New(rand.NewPCG(seed, 1))
		var b bytes.Buffer
		for b.Len() < n {
			fmt.Fprintf(&b, "2026-11-23T11:%02d:%02d.%03dZ INFO request id=%08x path=/api/v1/items/%d status=%d bytes=%d\n",
				rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.Uint32(), rng.IntN(5000), []int{200, 200, 200, 404, 500}[rng.IntN(5)], rng.IntN(100000))
		}
		return b.Bytes()[:n]
	}
	for k, body := range map[string][]byte{"in/logs/app.log": text(1, 9*mib+77), "in/logs/small.csv": text(2, 40<<10)} {
		e.srv.PutObject(t, "src", k, body)
		e.want[k] = body
	}
	e.fns.Configure(func(c *create.Config) {
		c.PieceSize = 2 * mib // app.log: 5 pieces, joined by PlanLayout
		c.MaxReadsPerBatch = 2
	})
	out := e.execute(t, request("out/c.zip", `,"compression":"deflate","digests":["sha256"],"checksumsFile":"SHA256SUMS"`), "exec-compress")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	if got, want := topLevelStates(out), []string{"PlanArchive", "HasWorkerParts", "ReadEntries", "PlanLayout", "HasWorkerParts", "BuildParts", "FinalizeArchive", "ArchiveCreated"}; !slices.Equal(got, want) {
		t.Errorf("states entered: %v, want %v", got, want)
	}
	if n := len(e.fns.Calls("reader")); n < 2 {
		t.Errorf("reader invoked %d times; the read jobs should make several batches", n)
	}
	if n := len(e.fns.Calls("planner")); n != 2 {
		t.Errorf("planner invoked %d times, want 2 (PlanArchive, PlanLayout)", n)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.zip")
	e.srv.DownloadFile(t, "dst", "out/c.zip", path)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	var sums []byte
	methods := map[string]uint16{}
	for _, f := range zr.File {
		methods[f.Name] = f.Method
		if f.Name == "SHA256SUMS" {
			rc, _ := f.Open()
			sums, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	zr.Close()
	for name, want := range map[string]uint16{"logs/app.log": zip.Deflate, "logs/small.csv": zip.Deflate, "small/a.txt": zip.Store, "big/b.bin": zip.Store, "SHA256SUMS": zip.Store} {
		if methods[name] != want {
			t.Errorf("%s: method %d, want %d", name, methods[name], want)
		}
	}
	var want []zipcheck.Want
	for k, body := range e.want {
		want = append(want, zipcheck.WantBytes(strings.TrimPrefix(k, "in/"), body))
	}
	zipcheck.Check(t, path, append(want, zipcheck.WantBytes("SHA256SUMS", sums)))
	x := filepath.Join(dir, "x")
	if b, err := exec.Command("unzip", "-q", path, "-d", x).CombinedOutput(); err != nil {
		t.Fatalf("unzip: %v\n%s", err, b)
	}
	check := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
	check.Dir = x
	if b, err := check.CombinedOutput(); err != nil || strings.Count(string(b), ": OK") != len(e.want) {
		t.Fatalf("sha256sum -c: %v\n%s", err, b)
	}
	e.assertClean(t, "")
}

// (4b) A reader failure that cannot heal (the source changed under the read:
// GetObject If-Match answers 412) fails ReadEntries; Abort recovers the
// batch's own error and leaves nothing (no intermediate pieces, no upload).
func TestASLReadPassFailureCleansUp(t *testing.T) {
	e := newEnv(t)
	e.fns.Configure(func(c *create.Config) { c.PieceSize = mib })
	e.fns.SetFault("reader", func(_ context.Context, attempt int, _ json.RawMessage) error {
		if attempt == 2 {
			e.srv.PutObject(t, "src", "in/big/c.bin", make([]byte, 7*mib))
		}
		return nil
	})
	out := e.execute(t, request("out/c.zip", `,"compression":"deflate","maxConcurrency":1`), "exec-read-fail")
	if out.Status != "FAILED" || out.Error != "SourceChangedError" {
		t.Fatalf("execution %s %q (%s), want FAILED SourceChangedError", out.Status, out.Error, trim(out.Cause, 300))
	}
	if caught := events(out, "StateCaught", "ReadEntries"); len(caught) != 1 {
		t.Errorf("ReadEntries Catch events: %+v", caught)
	}
	if n := len(e.fns.Calls("worker")) + len(e.fns.Calls("finalizer")); n != 0 {
		t.Errorf("worker/finalizer invoked %d times after a failed read pass", n)
	}
	if n := len(e.fns.Calls("abort")); n != 1 {
		t.Errorf("abort invoked %d times, want 1", n)
	}
	e.assertClean(t, "out/c.zip")
}
