package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// resumeObjects are n small objects (the workers stream them into upload
// parts) and big ones of just over 5 MiB (copied, a part each): enough
// parts that a fault at about 80 % of them leaves most built.
func resumeObjects(small, big int) []object {
	var objs []object
	for i := range small {
		objs = append(objs, object{fmt.Sprintf("in/small/%04d.txt", i), 2000 + i*37%4000, s3test.ChecksumNone})
	}
	for i := range big {
		objs = append(objs, object{fmt.Sprintf("in/big/%02d.bin", i), 5*mib + 1000 + i, s3test.ChecksumCRC32})
	}
	return objs
}

// A run whose part requests start failing with 500 InternalError at about
// 80 % of its parts, past every retry, is kept (upload, work objects and
// the kept record stay); Resume, the fault gone, builds only the batches
// that had not succeeded, and the archive is byte for byte the one a run
// without faults makes, read right by every reader, with nothing left.
func TestResumeAfterTransientFailure(t *testing.T) {
	e := newEnv(t, resumeObjects(300, 16))
	ctx := context.Background()
	clean := e.runner()
	cleanRun, err := clean.Run(ctx, request("duo", "in/", "out/clean.zip", ""), "exec-clean")
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(faultproxy.Config{Target: e.srv.Endpoint(), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	through := e.srv.Client(t, func(o *s3.Options) { o.BaseEndpoint = aws.String(p.URL()) })
	r := &Runner{S3: through, Config: Config{WorkBucket: "work", DefaultMaxConcurrency: 2, PartsPerBatch: 1}, Log: quietLog(), Keep: time.Hour}

	parts := cleanRun.Output.Stats.UploadParts + cleanRun.Output.Stats.CopyParts
	p.SetRules([]faultproxy.Rule{{Ops: []faultproxy.Op{faultproxy.UploadPart, faultproxy.UploadPartCopy}, Faults: []faultproxy.Fault{faultproxy.InternalError}, Rate: 1, After: parts * 8 / 10}})
	_, err = r.Run(ctx, request("duo", "in/", "out/a.zip", ""), "exec-r")
	var kept *stepfn.KeptError
	if !errors.As(err, &kept) || !Resumable(err) {
		t.Fatalf("err = %v, want a kept run (stepfn.KeptError) failed by a transient error", err)
	}
	if ups := e.uploads(t, "dst"); ups != 1 {
		t.Fatalf("%d uploads of the archive after the kept failure, want its one upload kept", ups)
	}
	if _, err := e.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("work"), Key: aws.String(r.Config.Defaults().workPrefix("exec-r") + stepfn.KeptName)}); err != nil {
		t.Fatalf("no kept record: %v", err)
	}

	p.SetRules(nil)
	start := time.Now()
	res, stats, err := r.Resume(ctx, "exec-r")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resume: %d parts by workers, %d listed before, %d built (%d built twice), %d batches run, %d kept, %.2f s",
		stats.Parts, stats.Listed, stats.Built, stats.Rebuilt, stats.BatchesRun, stats.BatchesKept, time.Since(start).Seconds())
	if stats.Listed+stats.Built-stats.Rebuilt != stats.Parts {
		t.Errorf("listed %d + built %d - rebuilt %d != the plan's %d worker parts", stats.Listed, stats.Built, stats.Rebuilt, stats.Parts)
	}
	if stats.Listed < stats.Parts/2 || stats.BatchesKept == 0 {
		t.Errorf("the failed run left %d of %d parts (%d batches kept): the fault was meant to come at ~80 %%", stats.Listed, stats.Parts, stats.BatchesKept)
	}
	// What a resume builds twice is what the failed run's unfinished
	// batches had built: at most the batches in flight when it stopped.
	if inFlight := res.Job.MaxConcurrency * stats.MostPerBatch; stats.Rebuilt > inFlight {
		t.Errorf("%d parts built twice, more than the %d a failed run can have had in flight (%d batches of at most %d parts)", stats.Rebuilt, inFlight, res.Job.MaxConcurrency, stats.MostPerBatch)
	}
	if batches := stats.BatchesRun + stats.BatchesKept; batches <= res.Job.MaxConcurrency {
		t.Errorf("%d batches, %d at once: the test needs batches that never ran when the fault came", batches, res.Job.MaxConcurrency)
	}
	if res.Output == nil || res.Output.Archive.URI != "s3://dst/out/a.zip" {
		t.Fatalf("resume output %+v", res.Output)
	}
	e.checkArchive(t, "out/a.zip", "in/")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.zip"), filepath.Join(dir, "clean.zip")
	e.srv.DownloadFile(t, "dst", "out/a.zip", a)
	e.srv.DownloadFile(t, "dst", "out/clean.zip", b)
	if !sameFile(t, a, b) {
		t.Error("the resumed archive differs from the one a run without faults made")
	}
	e.srv.Keys(t, "dst", "") // the listing itself must work
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
	if _, _, err := r.Resume(ctx, "exec-r"); err == nil {
		t.Error("a second resume of a finished run succeeded; want an error saying there is no kept run")
	}
}

// A failure no retry mends aborts at once, whatever Keep says: a source
// that changed mid-run leaves no upload and no work objects.
func TestKeepAbortsWhatCannotHeal(t *testing.T) {
	e := newEnv(t, mixedObjects("in/", s3test.ChecksumNone))
	r := e.runner()
	r.Keep = time.Hour
	r.Config.DefaultMaxConcurrency = 1
	w := &Worker{S3: e.s3, Config: r.Config}
	overwritten := false
	r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
		if !overwritten {
			overwritten = true
			e.srv.PutObject(t, "src", "in/big/c.bin", make([]byte, 7*mib))
		}
		return w.Handle(ctx, in)
	}
	_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", ""), "exec-changed")
	var changed *failure.SourceChangedError
	var kept *stepfn.KeptError
	if !errors.As(err, &changed) || errors.As(err, &kept) {
		t.Fatalf("err = %v, want SourceChangedError, not kept", err)
	}
	e.assertClean(t)
}

func (e *env) uploads(t *testing.T, bucket string) int {
	t.Helper()
	out, err := e.s3.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
