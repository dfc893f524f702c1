package asl_test

// The real statemachine/extract.asl.json under aws-local-stepfunctions
// (execute.ts with ASL_FILE), its Lambda tasks served by the extract
// handlers, its Distributed Map by the same adapter, against versitygw.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/stepfn"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/testenv/mapadapter"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// extractFunctions serves the extract handlers under the names execute.ts
// gives the ASL's function placeholders (planner, worker, finalizer, abort).
type extractFunctions struct {
	s3     *s3.Client
	cfg    extract.Config
	mu     sync.Mutex
	count  map[string]int
	types  map[string][]string // errorType per failed invocation, by function
	faults map[string]func(attempt int, payload []byte) error
}

func (f *extractFunctions) setFault(fn string, fault func(attempt int, payload []byte) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[fn] = fault
}

// calls is how many times fn was invoked.
func (f *extractFunctions) calls(fn string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count[fn]
}

func (f *extractFunctions) errorTypes(fn string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.types[fn]...)
}

func decodeCall[In, Out any](h func(context.Context, In) (Out, error)) func(context.Context, []byte) (any, error) {
	return func(ctx context.Context, raw []byte) (any, error) {
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, err
		}
		return h(ctx, in)
	}
}

func (f *extractFunctions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var call func(context.Context, []byte) (any, error)
	switch r.URL.Path {
	case "/adapter/read-items":
		out, err := mapadapter.ReadItems(r.Context(), f.s3, body)
		reply(w, out, err, "States.ItemReaderFailed")
		return
	case "/adapter/write-results":
		out, err := mapadapter.WriteResults(r.Context(), f.s3, body)
		reply(w, out, err, "States.ResultWriterFailed")
		return
	}
	f.mu.Lock()
	cfg := f.cfg // set by tests after the server started
	f.mu.Unlock()
	switch r.URL.Path {
	case "/invoke/planner":
		call = decodeCall((&extract.Planner{S3: f.s3, Config: cfg}).Handle)
	case "/invoke/worker":
		call = decodeCall((&extract.Worker{S3: f.s3, Config: cfg}).Handle)
	case "/invoke/finalizer":
		call = decodeCall((&extract.Finalizer{S3: f.s3, Config: cfg}).Handle)
	case "/invoke/abort":
		call = decodeCall((&extract.Aborter{S3: f.s3, Config: cfg}).Handle)
	default:
		http.NotFound(w, r)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/invoke/")
	f.mu.Lock()
	f.count[name]++
	attempt, fault := f.count[name], f.faults[name]
	f.mu.Unlock()
	var err error
	if fault != nil {
		err = fault(attempt, body)
	}
	var out any
	if err == nil {
		out, err = call(r.Context(), body)
	}
	if err != nil {
		// What functions/extract-*/main.go report (lambdaenv.Start with extract.ErrorType).
		typ := extract.ErrorType(err)
		f.mu.Lock()
		f.types[name] = append(f.types[name], typ)
		f.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorType": typ, "errorMessage": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

type extractEnv struct {
	srv  *s3test.Server
	s3   *s3.Client
	fns  *extractFunctions
	url  string
	want map[string][]byte
	zip  []byte
}

// newExtractEnv builds an archive of STORED and DEFLATE entries (one STORED
// entry large enough to be copied server-side), stores it at src/in/a.zip.
func newExtractEnv(t *testing.T) *extractEnv {
	t.Helper()
	srv := s3test.Start(t)
	e := &extractEnv{srv: srv, s3: srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}), want: map[string][]byte{}}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	files := []struct {
		name   string
		body   []byte
		method uint16
	}{
		{"big/copied.bin", s3test.Bytes(1, 3*mib+17), zip.Store},
		{"big/second.bin", s3test.Bytes(2, 2*mib), zip.Store},
		{"text/deflated.txt", bytes.Repeat([]byte("extract me, byte for byte\n"), 40000), zip.Deflate},
		{"small/a.txt", []byte("a small stored entry"), zip.Store},
		{"small/empty", nil, zip.Store},
		{"ünïcode/名前.txt", bytes.Repeat([]byte("名前"), 999), zip.Deflate},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: f.method, Modified: time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(f.body)
		e.want[f.name] = f.body
	}
	if _, err := zw.CreateHeader(&zip.FileHeader{Name: "big/", Method: zip.Store}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	e.zip = buf.Bytes()
	srv.PutObject(t, "src", "in/a.zip", e.zip)
	e.fns = &extractFunctions{s3: e.s3, cfg: extract.Config{WorkBucket: "work", BatchSize: 2, MaxConcurrency: 3, Workers: 2},
		count: map[string]int{}, types: map[string][]string{}, faults: map[string]func(int, []byte) error{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: e.fns, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	e.url = "http://" + ln.Addr().String()
	return e
}

func (e *extractEnv) execute(t *testing.T, req string, execution string) *Outcome {
	t.Helper()
	t.Setenv("ASL_FILE", filepath.Join(repoRoot(t), "statemachine", "extract.asl.json"))
	out := Execute(t, e.url, json.RawMessage(req), RunOptions{Execution: execution})
	t.Logf("execution %s: %s %s %s", execution, out.Status, out.Error, trim(out.Cause, 400))
	return out
}

// objects returns every object under prefix in dst, by key without prefix.
func (e *extractEnv) objects(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(e.s3, &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = e.srv.GetObject(t, "dst", aws.ToString(o.Key))
		}
	}
	return out
}

// clean asserts no object under prefix, no work object, no upload.
func (e *extractEnv) clean(t *testing.T, prefix string) {
	t.Helper()
	for k := range e.objects(t, prefix) {
		t.Errorf("left behind: s3://dst/%s%s", prefix, k)
	}
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}

func extractRequest(prefix string) string {
	return fmt.Sprintf(`{"archive":{"bucket":"src","key":"in/a.zip"},"destination":{"bucket":"dst","prefix":%q},"options":{"smallStored":1048576}}`, prefix)
}

// The whole extract state machine: every entry back byte for byte, the
// report lists each object with its CRC-32, nothing left in the work bucket.
func TestASLExtractSucceeds(t *testing.T) {
	e := newExtractEnv(t)
	out := e.execute(t, extractRequest("out/a/"), "extract-ok")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	var sum extract.Summary
	if err := json.Unmarshal(out.Output, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Objects != len(e.want) || sum.Report != "s3://dst/out/a/"+extract.ReportName || sum.CopiedBytes < 5*mib {
		t.Errorf("execution output: %s", out.Output)
	}
	got := e.objects(t, "out/a/")
	var rep struct{ Objects []extract.Written }
	if err := json.Unmarshal(got[extract.ReportName], &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	delete(got, extract.ReportName)
	if len(got) != len(e.want) || len(rep.Objects) != len(e.want) {
		t.Errorf("got %d objects and %d in the report, want %d", len(got), len(rep.Objects), len(e.want))
	}
	for name, body := range e.want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, body) {
			t.Errorf("%s: got %d bytes (present %v), want %d", name, len(g), ok, len(body))
		}
	}
	// 6 objects in jobs of at most 2 per batch: the Map ran several batches.
	if n := e.fns.count["worker"]; n < 2 {
		t.Errorf("%d worker invocations, want the jobs spread over at least 2 batches", n)
	}
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
	if e.fns.count["abort"] != 0 {
		t.Error("abort ran on a successful execution")
	}
}

// A zip-slip archive is refused by the planner: the execution fails with
// RefusedError, naming the entry, and nothing is written.
func TestASLExtractRefusedArchive(t *testing.T) {
	e := newExtractEnv(t)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range []string{"fine.txt", "../../etc/evil"} {
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		_, _ = w.Write([]byte(n))
	}
	_ = zw.Close()
	e.srv.PutObject(t, "src", "in/slip.zip", buf.Bytes())
	req := `{"archive":{"bucket":"src","key":"in/slip.zip"},"destination":{"bucket":"dst","prefix":"out/slip/"}}`
	out := e.execute(t, req, "extract-refused")
	if out.Status != "FAILED" || out.Error != "RefusedError" || !strings.Contains(out.Cause, "../../etc/evil") {
		t.Fatalf("got %s %s %s, want FAILED RefusedError naming the entry", out.Status, out.Error, trim(out.Cause, 300))
	}
	if e.fns.count["worker"] != 0 || e.fns.count["planner"] != 1 {
		t.Errorf("planner ran %d times (a refusal is not retried), workers %d", e.fns.count["planner"], e.fns.count["worker"])
	}
	e.clean(t, "out/slip/")
}

// The archive replaced while the batches run: the next batch's reads and
// copies fail their If-Match (SourceChangedError, not retried), the Map
// fails, Abort deletes the objects the first batches wrote and aborts
// their uploads: nothing is left.
func TestASLExtractArchiveReplacedMidRun(t *testing.T) {
	e := newExtractEnv(t)
	e.fns.mu.Lock()
	e.fns.cfg.MaxConcurrency = 1
	e.fns.mu.Unlock()
	e.fns.setFault("worker", func(attempt int, _ []byte) error {
		if attempt == 2 {
			e.srv.PutObject(t, "src", "in/a.zip", append(append([]byte{}, e.zip...), 0))
		}
		return nil
	})
	out := e.execute(t, `{"archive":{"bucket":"src","key":"in/a.zip"},"destination":{"bucket":"dst","prefix":"out/replaced/"},"options":{"smallStored":1048576,"maxConcurrency":1}}`, "extract-replaced")
	if out.Status != "FAILED" || out.Error != "SourceChangedError" {
		t.Fatalf("got %s %s %s, want FAILED SourceChangedError", out.Status, out.Error, trim(out.Cause, 300))
	}
	if types := e.fns.errorTypes("worker"); len(types) != 1 || types[0] != "SourceChangedError" {
		t.Errorf("worker errors %v: want one SourceChangedError, not retried", types)
	}
	if e.fns.count["abort"] == 0 {
		t.Error("abort never ran")
	}
	e.clean(t, "out/replaced/")
}

// A transient worker failure is retried by RunBatch's Retry and the
// extraction completes; a worker failing for good after writing objects is
// cleaned up completely.
func TestASLExtractWorkerFaults(t *testing.T) {
	e := newExtractEnv(t)
	// The first batch writes its objects, then its answer is lost (as when
	// S3 fails the last request): the retry meets its own objects (refused
	// by If-None-Match, recognised by their execution metadata) and counts
	// them as written.
	e.fns.setFault("worker", func(attempt int, payload []byte) error {
		if attempt == 1 {
			var in extract.BatchInput
			if err := json.Unmarshal(payload, &in); err != nil {
				return err
			}
			if _, err := (&extract.Worker{S3: e.s3, Config: e.fns.cfg}).Handle(context.Background(), in); err != nil {
				return err
			}
			return &stepfn.TransientError{Err: errors.New("injected: S3 answered 503 SlowDown after the batch wrote its objects")}
		}
		return nil
	})
	out := e.execute(t, extractRequest("out/retried/"), "extract-retried")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	got := e.objects(t, "out/retried/")
	for name, body := range e.want {
		if !bytes.Equal(got[name], body) {
			t.Errorf("%s: %d bytes, want %d", name, len(got[name]), len(body))
		}
	}
	if types := e.fns.errorTypes("worker"); len(types) != 1 || types[0] != "TransientError" {
		t.Errorf("worker errors %v, want one TransientError (retried)", types)
	}
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}

	// A worker that dies after some objects were written, for good.
	e.fns.mu.Lock()
	e.fns.count = map[string]int{}
	e.fns.mu.Unlock()
	e.fns.setFault("worker", func(attempt int, _ []byte) error {
		if attempt >= 2 { // the first batch has written its objects
			return &failure.ChecksumMismatchError{Msg: "injected: entry decodes to the wrong CRC-32"}
		}
		return nil
	})
	out = e.execute(t, `{"archive":{"bucket":"src","key":"in/a.zip"},"destination":{"bucket":"dst","prefix":"out/failed/"},"options":{"smallStored":1048576,"maxConcurrency":1}}`, "extract-failed")
	if out.Status != "FAILED" || out.Error != "ChecksumMismatchError" {
		t.Fatalf("got %s %s, want FAILED ChecksumError", out.Status, out.Error)
	}
	e.clean(t, "out/failed/")
	if got := len(e.objects(t, "out/retried/")); got != len(e.want)+1 {
		t.Errorf("the earlier extraction lost objects: %d left, want %d", got, len(e.want)+1)
	}
}

// An archive with nothing to write (a directory entry, and a bzip2 entry
// skipped with skipUnsupported) takes the Choice straight to Finalize: no
// Map, no worker, a report listing the skipped entry.
func TestASLExtractNothingToDo(t *testing.T) {
	e := newExtractEnv(t)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if _, err := zw.CreateHeader(&zip.FileHeader{Name: "dir/", Method: zip.Store}); err != nil {
		t.Fatal(err)
	}
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "dir/old.bz2.txt", Method: 12, CompressedSize64: 4, UncompressedSize64: 9, CRC32: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("BZh9"))
	_ = zw.Close()
	e.srv.PutObject(t, "src", "in/empty.zip", buf.Bytes())
	out := e.execute(t, `{"archive":{"bucket":"src","key":"in/empty.zip"},"destination":{"bucket":"dst","prefix":"out/empty/"},"options":{"skipUnsupported":true}}`, "extract-nothing")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	if e.fns.count["worker"] != 0 {
		t.Errorf("%d worker invocations, want none (HasJobs → FinalizeExtraction)", e.fns.count["worker"])
	}
	got := e.objects(t, "out/empty/")
	if len(got) != 1 || !strings.Contains(string(got[extract.ReportName]), "old.bz2.txt") {
		t.Errorf("want only the report, listing the skipped entry; got %d objects: %s", len(got), got[extract.ReportName])
	}
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}
