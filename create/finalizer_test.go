package create

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// partRecorder records the size of every part sent with UploadPart.
type partRecorder struct {
	S3
	mu    sync.Mutex
	sizes map[int32]int64
}

func (r *partRecorder) UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	r.mu.Lock()
	r.sizes[aws.ToInt32(in.PartNumber)] = aws.ToInt64(in.ContentLength)
	r.mu.Unlock()
	return r.S3.UploadPart(ctx, in, optFns...)
}

// TestRunWritesDirectoryInParts: 18,000 objects with long keys make a
// central directory of about 12 MiB; with 5 MiB directory parts the
// finalizer sends it as the last three parts, two of exactly 5 MiB, and
// every ZIP reader reads the archive S3 completed with its whole CRC-32.
func TestRunWritesDirectoryInParts(t *testing.T) {
	const n = 18_000
	e := newEnv(t, nil)
	// Long keys, in path segments a file system takes (versitygw stores
	// keys as paths).
	seg := strings.Repeat("d", 200)
	keyOf := func(i int) string { return fmt.Sprintf("in/%03d-%s/%s/%s/%06d.txt", i%100, seg, seg, seg, i) }
	objects := make(map[string][]byte, n)
	rest := make(map[string][]byte, n)
	dirSize := int64(0)
	for i := range n {
		key := keyOf(i)
		objects[key] = []byte(fmt.Sprintf("object %d\n", i))
		dirSize += 46 + int64(len(key)-len("in/"))
		if i >= 100 {
			rest[key] = objects[key]
		}
	}
	t0 := time.Now()
	// One object per folder first: versitygw refuses concurrent puts that
	// create the same folder.
	for i := range 100 {
		e.srv.PutObject(t, "src", keyOf(i), objects[keyOf(i)])
	}
	e.srv.PutObjects(t, "src", rest)
	t.Logf("uploaded %d objects in %s", n, time.Since(t0).Round(time.Millisecond))
	e.want = objects
	rec := &partRecorder{S3: e.s3, sizes: map[int32]int64{}}
	r := &Runner{S3: rec, Config: Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 8, DirectoryPartSize: s3part.MinPartSize}}
	t0 = time.Now()
	res, err := r.Run(context.Background(), request("stream", "in/", "out/a.zip", ""), "exec-dirparts")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run: %s, %d parts, archive %d bytes", time.Since(t0).Round(time.Millisecond), res.Output.Stats.Parts, res.Output.Archive.Size)
	finals := int(s3part.MinPartSize-1+dirSize) / s3part.MinPartSize
	if finals < 2 {
		t.Fatalf("directory of %d bytes fits one 5 MiB part: make the keys longer", dirSize)
	}
	last := int32(res.Output.Stats.Parts)
	for k := range finals {
		num := last - int32(k)
		size, sent := rec.sizes[num]
		switch {
		case !sent:
			t.Errorf("part %d (of %d) was not sent with UploadPart; the directory's %d bytes should be the last %d parts", num, last, dirSize, finals)
		case k > 0 && size != s3part.MinPartSize:
			t.Errorf("part %d (of %d) is %d bytes; the directory's parts but the last should be %d", num, last, size, s3part.MinPartSize)
		}
	}
	e.checkArchive(t, "out/a.zip", "in/")
	e.assertClean(t)
}

// TestMergeRefusesResultForDirectoryPart: the directory's parts are the
// finalizer's; a worker result naming one is not taken.
func TestMergeRefusesResultForDirectoryPart(t *testing.T) {
	entries := make([]plan.Entry, 12_000)
	for i := range entries {
		name := fmt.Sprintf("%06d-%s", i, strings.Repeat("n", 900))
		entries[i] = plan.Entry{Name: name, Source: plan.Source{Bucket: "src", Key: name}, Size: 1}
	}
	p, err := plan.Make(entries, plan.Options{Strategy: plan.StrategyStream, DirectoryPartSize: s3part.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FinalParts()) < 2 {
		t.Fatalf("%d final parts, want 2 or more", len(p.FinalParts()))
	}
	directoryPart := p.FinalParts()[1].Number
	_, _, err = mergeResults(p.WorkerParts(), p.Stats(), []PartResult{{Part: directoryPart, ETag: `"x"`}})
	if err == nil || !strings.Contains(err.Error(), "worker parts are 1 to") {
		t.Fatalf("a worker result for directory part %d: %v, want it refused", directoryPart, err)
	}
}

// The report is written with If-None-Match: an object that took its key
// after the last check is kept, and the run says the report is missing;
// this execution's own report from an earlier attempt counts as written.
func TestWriteReportNeverReplaces(t *testing.T) {
	e := newEnv(t, nil)
	f := &Finalizer{S3: e.s3, Config: Config{WorkBucket: "work"}}
	p := &plan.Plan{Strategy: plan.StrategyDuo}
	a := &Archive{URI: "s3://dst/a.zip", Size: 22}
	job := &Job{Execution: "exec-1", Destination: Destination{Bucket: "dst", Key: "a.zip"}}
	key := ReportKey(job.Destination)

	e.srv.PutObject(t, "dst", key, []byte("someone else's"))
	err := f.writeReport(t.Context(), job, p, []Archive{*a}, ReportStats{})
	var de *failure.DestinationExistsError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a DestinationExistsError", err)
	}
	if got := e.srv.GetObject(t, "dst", key); string(got) != "someone else's" {
		t.Fatalf("report key replaced: %q", got)
	}

	own, _ := json.Marshal(Report{Execution: "exec-1"})
	e.srv.PutObject(t, "dst", key, own)
	if err := f.writeReport(t.Context(), job, p, []Archive{*a}, ReportStats{}); err != nil {
		t.Fatalf("the execution's own earlier report: %v", err)
	}

	job.Overwrite = true
	if err := f.writeReport(t.Context(), job, p, []Archive{*a}, ReportStats{}); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(e.srv.GetObject(t, "dst", key), &r); err != nil || r.Archive.Size != 22 {
		t.Fatalf("with overwrite the report is replaced: %+v, %v", r, err)
	}
}

// conflict409 is S3's answer to a conditional write that meets another one
// in progress.
func conflict409() error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusConflict}},
		Err: &smithy.GenericAPIError{Code: "ConditionalRequestConflict",
			Message: "A conflicting conditional operation is currently in progress against this resource. Please try again."},
	}}
}

// reportFaults is S3 whose PutObject of the report's key first runs
// answer (the n-th time it is called, from 1): a non-nil error is S3's
// answer, nil passes the request on.
type reportFaults struct {
	S3
	key    string
	answer func(n int) error
	n      int
}

func (f *reportFaults) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if aws.ToString(in.Key) == f.key {
		f.n++
		if err := f.answer(f.n); err != nil {
			return nil, err
		}
	}
	return f.S3.PutObject(ctx, in, opts...)
}

// A 409 ConditionalRequestConflict on the report's PUT is retried, and a
// report that cannot be written at all costs a warning, never the archive:
// the run succeeds, the archive is there and sound, nothing else is left.
func TestReportFailureKeepsTheArchive(t *testing.T) {
	old := reportRetry
	reportRetry.Backoff = s3err.Linear(time.Millisecond)
	t.Cleanup(func() { reportRetry = old })
	objects := []object{{"in/a.txt", 1000, s3test.ChecksumNone}, {"in/b.bin", 3 * mib, s3test.ChecksumNone}}
	for _, tc := range []struct {
		name        string
		answer      func(e *env) func(n int) error
		wantWarning string // "" none: the report is written
		wantOther   bool   // the other writer's object is at the report's key
	}{
		{"conflict-once", func(*env) func(int) error {
			return func(n int) error {
				if n == 1 {
					return conflict409()
				}
				return nil
			}
		}, "", false},
		{"conflict-every-time", func(*env) func(int) error {
			return func(int) error { return conflict409() }
		}, "ConditionalRequestConflict", false},
		{"another-writer-took-the-key", func(e *env) func(int) error {
			return func(int) error {
				e.srv.PutObject(t, "dst", "out/a.zip.report.json", []byte("someone else's"))
				return nil
			}
		}, "another writer created s3://dst/out/a.zip.report.json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, objects)
			r := e.runner()
			faults := &reportFaults{S3: e.s3, key: "out/a.zip.report.json", answer: tc.answer(e)}
			r.S3 = faults
			res, err := r.Run(t.Context(), request("stream", "in/", "out/a.zip", ""), "exec-report")
			if err != nil {
				t.Fatalf("the archive was completed, but the run failed: %v", err)
			}
			e.checkArchive(t, "out/a.zip", "in/")
			e.assertClean(t)
			out := res.Output
			if tc.wantWarning == "" {
				if len(out.Warnings) > 0 || out.Report != "s3://dst/out/a.zip.report.json" {
					t.Errorf("report %q, warnings %q; want the report written after the retry", out.Report, out.Warnings)
				}
				var rep Report
				if err := json.Unmarshal(e.srv.GetObject(t, "dst", "out/a.zip.report.json"), &rep); err != nil || rep.Execution != "exec-report" {
					t.Errorf("report: %+v, %v", rep, err)
				}
				if faults.n != 2 {
					t.Errorf("report PUT %d times, want 2 (one 409, one retry)", faults.n)
				}
				return
			}
			if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], tc.wantWarning) || !strings.Contains(out.Warnings[0], "s3://dst/out/a.zip is complete") {
				t.Errorf("warnings %q, want one saying the archive is complete and %q", out.Warnings, tc.wantWarning)
			}
			if out.Report != "" {
				t.Errorf("output names the report %q, which was not written", out.Report)
			}
			if tc.wantOther {
				if got := e.srv.GetObject(t, "dst", "out/a.zip.report.json"); string(got) != "someone else's" {
					t.Errorf("the other writer's object was replaced: %q", got)
				}
			} else if faults.n != reportRetry.Attempts {
				t.Errorf("report PUT %d times, want %d", faults.n, reportRetry.Attempts)
			}
		})
	}
}

// endlessReport serves the report at key as a report whose entries never
// end: reading more than a MiB of them fails, as holding the report of
// millions of entries would exhaust the finalizer.
type endlessReport struct {
	*s3.Client
	key  string
	head []byte // the report up to its entries
}

func (c *endlessReport) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if aws.ToString(in.Key) != c.key {
		return c.Client.GetObject(ctx, in, opts...)
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(io.MultiReader(bytes.NewReader(c.head), &endlessEntries{}))}, nil
}

type endlessEntries struct{ read int }

func (e *endlessEntries) Read(b []byte) (int, error) {
	if e.read > 1<<20 {
		return 0, errors.New("read a MiB into the report's entries")
	}
	const entry = `{"name": "e", "size": 1, "crc32": "00000000", "offset": 0}, `
	n := 0
	for ; n+len(entry) <= len(b); n += len(entry) {
		copy(b[n:], entry)
	}
	if n == 0 {
		n = copy(b, entry[:min(len(b), len(entry))])
	}
	e.read += n
	return n, nil
}

// A run again reads an existing report only up to its entries to know
// whose it is: this execution's own report from an earlier attempt when its
// PUT meets one, and in finishedBefore the archive it describes. Read whole,
// a report of ten million entries (gigabytes) would not fit the finalizer.
func TestReportReadOnlyToItsEntries(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.PutObject(t, "dst", "a.zip", make([]byte, 22))
	h, err := e.s3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("a.zip")})
	if err != nil {
		t.Fatal(err)
	}
	a := Archive{URI: "s3://dst/a.zip", Size: 22, ETag: aws.ToString(h.ETag), CRC32: "00000000"}
	job := &Job{Execution: "exec-1", WorkBucket: "work", WorkPrefix: "exec-1/", Destination: Destination{Bucket: "dst", Key: "a.zip"}}
	key := ReportKey(job.Destination)
	head, _ := json.MarshalIndent(Report{Archive: a, Execution: "exec-1", Entries: []ReportEntry{}}, "", "  ")
	head = append(head[:len(head)-len("]\n}")], "[\n    "...)
	e.srv.PutObject(t, "dst", key, []byte("the earlier attempt's report"))
	f := &Finalizer{S3: &endlessReport{Client: e.s3, key: key, head: head}, Config: Config{WorkBucket: "work"}}

	if err := f.writeReport(t.Context(), job, &plan.Plan{Strategy: plan.StrategyDuo}, []Archive{a}, ReportStats{}); err != nil {
		t.Errorf("the execution's own earlier report: %v", err)
	}
	out, ok := f.finishedBefore(t.Context(), job)
	if !ok || out.Archive != a {
		t.Errorf("finishedBefore = %+v, %v; want the archive its report describes", out, ok)
	}
}

// writeReport writes the report of p's archives as the finalizer does: the
// lines of its entries spooled (reportLines), then put (putReport).
func (f *Finalizer) writeReport(ctx context.Context, job *Job, p *plan.Plan, archives []Archive, stats ReportStats) error {
	lines, err := newReportLines()
	if err != nil {
		return err
	}
	defer lines.discard()
	for i := range p.Entries {
		if err := lines.add(&p.Entries[i], p.ArchiveOf(p.Entries[i].Index)); err != nil {
			return err
		}
	}
	r := Report{Archive: archives[0], Execution: job.Execution, Strategy: p.Strategy, Stats: stats}
	if p.Split() {
		r.Archives = archives
	}
	return f.putReport(ctx, job, &r, lines)
}
