package faults_test

// Fault rows for extract: the extract handlers (as extract.Run drives them,
// the way the state machine does) behind the fault proxy, a worker killed
// mid-entry, the archive replaced mid-run. Every row ends with every entry
// extracted byte for byte, or a typed failure with nothing under the prefix,
// no upload and no work object.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// extractWorld is a world with one archive at s3://src/x/a.zip: STORED
// entries copied server-side (one in three 5 MiB copy parts), DEFLATE and
// small STORED entries read in groups.
type extractWorld struct {
	*world
	entries map[string][]byte
	zip     []byte
}

func newExtractWorld(t *testing.T) *extractWorld {
	t.Helper()
	w := &extractWorld{world: newWorld(t), entries: map[string][]byte{}}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, b []byte, method uint16) {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(b)
		w.entries[name] = b
	}
	add("copy/large.bin", body(1, 11*mib+7), zip.Store)
	add("copy/mid.bin", body(2, 2*mib), zip.Store)
	for i := 0; i < 6; i++ {
		add(fmt.Sprintf("read/%02d.txt", i), bytes.Repeat([]byte(fmt.Sprintf("line %d of a deflated entry\n", i)), 2000+i*500), zip.Deflate)
		add(fmt.Sprintf("read/small-%02d.bin", i), body(uint64(10+i), 1000+i*3000), zip.Store)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	w.zip = buf.Bytes()
	w.srv.PutObject(t, "src", "x/a.zip", w.zip)
	return w
}

func extractRequest(prefix string) extract.Request {
	return extract.Request{Bucket: "src", Key: "x/a.zip", DestBucket: "dst", Prefix: prefix, Workers: 4, WorkBucket: "work",
		Options: extract.Options{SmallStored: 256 << 10, CopyPart: 5 * mib, ReadGroup: 64 << 10}}
}

// judgeExtract checks a run's outcome: every entry under prefix byte for
// byte (or, for a failure, a typed error and nothing under prefix), no
// upload, no work object; it records the row and scrubs.
func (w *extractWorld) judgeExtract(t *testing.T, started time.Time, p *fp.Proxy, expected, prefix string, err error) {
	w.judgeTyped(t, started, p, expected, prefix, err, extract.ErrorType(err))
}

// judgeTyped is judgeExtract with the error type the state machine would
// report given (a killed Lambda is Sandbox.Timedout, not a Go error).
func (w *extractWorld) judgeTyped(t *testing.T, started time.Time, p *fp.Proxy, expected, prefix string, err error, typ string) {
	t.Helper()
	var obs []string
	pass := true
	bad := func(format string, a ...any) {
		pass = false
		obs = append(obs, "BAD: "+fmt.Sprintf(format, a...))
	}
	got := map[string][]byte{}
	list, lerr := w.direct.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: &prefix})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, o := range list.Contents {
		got[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = w.object(t, aws.ToString(o.Key))
	}
	if err == nil {
		delete(got, extract.ReportName)
		wrong := 0
		for name, b := range w.entries {
			if !bytes.Equal(got[name], b) {
				wrong++
			}
		}
		if wrong > 0 || len(got) != len(w.entries) {
			bad("%d of %d entries wrong or missing, %d objects", wrong, len(w.entries), len(got))
		} else {
			obs = append(obs, fmt.Sprintf("%d objects byte for byte", len(got)))
		}
		if expected == "clean failure" {
			bad("succeeded, want a failure")
		}
	} else {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		obs = append(obs, typ+": "+msg)
		t.Logf("error: %v", err)
		if typ == "Error" {
			bad("error has no type the state machine can tell apart")
		}
		if expected == "objects" {
			bad("failed, want the objects")
		}
		if len(got) > 0 {
			bad("%d objects left under %s after a failed run", len(got), prefix)
		}
	}
	w.conclude(t, started, p, expected, obs, pass)
}

// TestExtractEveryAPI fails the first two calls of each S3 operation an
// extraction makes (500, 503, timeout, reset before or after the server
// acted): copies, uploads, reads, lists and cleanup absorb them.
func TestExtractEveryAPI(t *testing.T) {
	w := newExtractWorld(t)
	for i, op := range []fp.Op{fp.HeadObject, fp.GetObject, fp.ListObjectsV2, fp.CreateMultipartUpload, fp.UploadPartCopy,
		fp.CompleteMultipartUpload, fp.PutObject, fp.ListMultipartUploads, fp.DeleteObjects} {
		t.Run(string(op), func(t *testing.T) {
			started := time.Now()
			p, c := w.faults(t, uint64(300+i), fp.Rule{Ops: []fp.Op{op}, Faults: fp.AllFaults, Rate: 1, Limit: 2})
			prefix := "out/every-" + string(op) + "/"
			_, err := extract.Run(context.Background(), c, extractRequest(prefix), nil)
			p.SetRules(nil)
			w.judgeExtract(t, started, p, "objects", prefix, err)
		})
	}
}

// TestExtractHeavyFaults: a third of copies, uploads and reads fail: the
// objects, or a clean typed failure.
func TestExtractHeavyFaults(t *testing.T) {
	w := newExtractWorld(t)
	started := time.Now()
	p, c := w.faults(t, 401, fp.Rule{Ops: []fp.Op{fp.UploadPartCopy, fp.PutObject, fp.CompleteMultipartUpload, fp.GetObject, fp.CreateMultipartUpload}, Faults: fp.AllFaults, Rate: heavy})
	_, err := extract.Run(context.Background(), c, extractRequest("out/heavy/"), nil)
	p.SetRules(nil)
	w.judgeExtract(t, started, p, "objects or clean failure", "out/heavy/", err)
}

// killCopies cancels its batch once n part copies have finished: the copies
// in flight die half-way, as in a worker whose Lambda was killed mid-entry.
type killCopies struct {
	extract.Client
	n      int32
	seen   atomic.Int32
	cancel context.CancelFunc
}

func (k *killCopies) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, o ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	out, err := k.Client.UploadPartCopy(ctx, in, o...)
	if k.seen.Add(1) == k.n {
		k.cancel()
	}
	return out, err
}

// TestExtractWorkerKilled runs the handlers as the state machine does, with
// one batch holding every job: its first attempt is killed after the first
// copied part (mid-entry), having written some objects. Retried (the Map's
// Retry on Sandbox.Timedout), the batch finds its own objects, writes the
// rest, and Finalize aborts the killed attempt's upload: the objects, clean.
// Not retried, Abort leaves nothing.
func TestExtractWorkerKilled(t *testing.T) {
	w := newExtractWorld(t)
	cfg := extract.Config{WorkBucket: "work", BatchSize: 100, Workers: 2}
	for _, retried := range []bool{true, false} {
		name := map[bool]string{true: "retried", false: "aborted"}[retried]
		t.Run(name, func(t *testing.T) {
			started := time.Now()
			ctx := context.Background()
			prefix := "out/killed-" + name + "/"
			execution := "killed-" + name
			ex, in, kerr := w.killedBatch(t, cfg, prefix, execution, false, 1)
			if !retried {
				_, err := (&extract.Aborter{S3: w.direct, Config: cfg}).Handle(ctx, extract.AbortInput{State: mustJSON(ex), Error: mustJSON(map[string]string{"Error": "Sandbox.Timedout"}), Execution: execution})
				if err != nil {
					w.judgeExtract(t, started, nil, "clean failure", prefix, fmt.Errorf("abort: %w", err))
					return
				}
				w.judgeTyped(t, started, nil, "clean failure", prefix, fmt.Errorf("batch killed mid-entry, not retried: %w", kerr), "Sandbox.Timedout")
				return
			}
			out, err := (&extract.Worker{S3: w.direct, Config: cfg}).Handle(ctx, in)
			if err == nil {
				var res extract.FinalizeInput
				res.Extraction = *ex
				res.Results = writeResultLayout(t, w, ex, out)
				_, err = (&extract.Finalizer{S3: w.direct, Config: cfg}).Handle(ctx, res)
			}
			w.judgeExtract(t, started, nil, "objects", prefix, err)
		})
	}
}

// killedBatch plans an extraction into prefix and runs all its jobs as one
// batch, which is killed once n part copies have finished (the copies in
// flight die half-way, as in a worker whose Lambda was killed mid-entry). It
// returns the extraction, the batch and the batch's error.
func (w *extractWorld) killedBatch(t *testing.T, cfg extract.Config, prefix, execution string, overwrite bool, n int32) (*extract.Extraction, extract.BatchInput, error) {
	t.Helper()
	ctx := context.Background()
	req := extractRequest(prefix)
	raw, _ := json.Marshal(map[string]any{
		"archive": map[string]any{"bucket": req.Bucket, "key": req.Key}, "destination": map[string]any{"bucket": "dst", "prefix": prefix},
		"options": map[string]any{"overwrite": overwrite, "smallStored": req.SmallStored, "copyPart": req.CopyPart, "readGroup": req.ReadGroup},
	})
	ex, err := (&extract.Planner{S3: w.direct, Config: cfg}).Handle(ctx, extract.PlanInput{Request: raw, Execution: execution})
	if err != nil {
		t.Fatal(err)
	}
	var in extract.BatchInput
	in.Items, in.BatchInput.Job = readJobLines(t, w, ex), *ex
	kctx, cancel := context.WithCancel(ctx)
	k := &killCopies{Client: w.direct, n: n, cancel: cancel}
	_, kerr := (&extract.Worker{S3: k, Config: cfg}).Handle(kctx, in)
	cancel()
	if kerr == nil {
		t.Fatal("the killed batch succeeded")
	}
	return ex, in, kerr
}

// replaceArchive replaces the archive (one more byte) before the n-th call of op.
type replaceArchive struct {
	extract.Client
	w    *extractWorld
	t    *testing.T
	op   string
	n    int32
	seen atomic.Int32
}

func (r *replaceArchive) hit(op string) {
	if op == r.op && r.seen.Add(1) == r.n {
		r.w.srv.PutObject(r.t, "src", "x/a.zip", append(append([]byte{}, r.w.zip...), 0))
	}
}

func (r *replaceArchive) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, o ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	r.hit("UploadPartCopy")
	return r.Client.UploadPartCopy(ctx, in, o...)
}

func (r *replaceArchive) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	r.hit("GetObject")
	return r.Client.GetObject(ctx, in, o...)
}

// TestExtractArchiveReplaced: the archive is overwritten between the plan
// and a copy or a read: the pinned ETag no longer matches, the run fails
// with SourceChangedError and what it wrote is deleted.
func TestExtractArchiveReplaced(t *testing.T) {
	w := newExtractWorld(t)
	for _, c := range []struct {
		op string
		n  int32
	}{{"UploadPartCopy", 2}, {"GetObject", 4}} {
		t.Run("before "+c.op, func(t *testing.T) {
			started := time.Now()
			w.srv.PutObject(t, "src", "x/a.zip", w.zip)
			prefix := "out/replaced-" + c.op + "/"
			_, err := extract.Run(context.Background(), &replaceArchive{Client: w.direct, w: w, t: t, op: c.op, n: c.n}, extractRequest(prefix), nil)
			if err != nil && extract.ErrorType(err) != "SourceChangedError" {
				err = fmt.Errorf("want SourceChangedError: %w", err)
			}
			w.judgeExtract(t, started, nil, "clean failure", prefix, err)
		})
	}
	w.srv.PutObject(t, "src", "x/a.zip", w.zip)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// readJobLines is the Map's ItemReader: the planned jobs.
func readJobLines(t *testing.T, w *extractWorld, ex *extract.Extraction) []extract.Job {
	t.Helper()
	var jobs []extract.Job
	for _, line := range bytes.Split(w.srv.GetObject(t, ex.WorkBucket, ex.JobsKey), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var j extract.Job
		if err := json.Unmarshal(line, &j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// writeResultLayout is the Map's ResultWriter for one succeeded batch.
func writeResultLayout(t *testing.T, w *extractWorld, ex *extract.Extraction, out *extract.BatchOutput) *stepfn.MapResults {
	t.Helper()
	doc, _ := json.Marshal(out)
	children := []stepfn.ChildResult{{Status: "SUCCEEDED", Output: string(doc)}}
	d, err := stepfn.WriteResults[stepfn.ChildResult](context.Background(), stepfn.Put(w.srv.Client(t)), stepfn.ResultLocation{Bucket: ex.WorkBucket, Prefix: ex.WorkPrefix + "map/", MapRunArn: "test"}, children, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &stepfn.MapResults{ResultWriterDetails: d}
}
