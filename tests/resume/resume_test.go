// Package resume_test is the scale test of keep and resume: a create of
// 100,000 objects and an extract of its 100,000 entries, each failed by a
// fault at about 80 % of its work, kept, and resumed. It needs minutes and
// gigabytes of disk, so it runs only with S3ZIP_LONG=1 (make test-resume);
// make test runs the small versions (create/resume_test.go,
// tests/extract/resume_test.go, cmd/s3zip/resume_test.go).
//
//	S3ZIP_LONG=1 go test -count=1 -v -timeout 90m ./tests/resume/
//
// S3ZIP_RESUME_OBJECTS sets the number of objects (default 100000).
package resume_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// objects is how many objects the test archives (S3ZIP_RESUME_OBJECTS).
func objects(t *testing.T) int {
	n := 100_000
	if s := os.Getenv("S3ZIP_RESUME_OBJECTS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 100 {
			t.Fatalf("S3ZIP_RESUME_OBJECTS=%q: want a number of objects, at least 100", s)
		}
		n = v
	}
	return n
}

// body is object i's bytes: 1 to 12 KiB, the same for the same i.
func body(i int) []byte { return s3test.Bytes(uint64(i), 1024+i*7919%(11*1024)) }

func key(i int) string { return fmt.Sprintf("in/%03d/%06d.bin", i%500, i) }

// At most this share of the work may be done twice.
const maxRedone = 0.05

// TestResumeAtScale: the create fails when every part request from about
// 80 % of the parts on answers 500 InternalError past every retry, is kept,
// and is resumed without the fault: the archive holds every object byte for
// byte (every reader), at most 5 % of the parts were built twice, nothing
// is left. Then the extract of that archive fails when every write to the
// destination from about 80 % of the entries on answers 500, is kept, and
// is resumed: every object is its entry, at most 5 % were written twice,
// nothing is left.
func TestResumeAtScale(t *testing.T) {
	if os.Getenv("S3ZIP_LONG") != "1" {
		t.Skip("minutes and gigabytes: run with S3ZIP_LONG=1 (make test-resume)")
	}
	n := objects(t)
	srv := s3test.Start(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	ctx := context.Background()
	start := time.Now()
	if err := srv.PutEach(ctx, "src", n, 32, func(i int) (string, []byte, s3test.Checksum) { return key(i), body(i), s3test.ChecksumCRC32 }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d objects stored in %.0f s", n, time.Since(start).Seconds())

	p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Seed: 11, SourceSize: srv.ObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	quiet := slog.New(slog.DiscardHandler)

	// The create: stream parts of 5 MiB, a part a batch, 4 batches at once.
	runner := &create.Runner{S3: c, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 1}, Log: quiet, Keep: time.Hour}
	req := []byte(`{"source":{"bucket":"src","prefix":"in/"},"destination":{"bucket":"dst","key":"all.zip"},"options":{"strategy":"stream","partSize":5242880}}`)
	var archiveBytes int64
	for i := range n {
		archiveBytes += int64(len(body(i)))
	}
	parts := int(archiveBytes / (5 << 20)) // about: headers and the directory add a little
	p.SetRules([]fp.Rule{{Ops: []fp.Op{fp.UploadPart}, Bucket: "dst", Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: parts * 8 / 10}})
	start = time.Now()
	_, err = runner.Run(ctx, req, "scale-create")
	var kept *stepfn.KeptError
	if !errors.As(err, &kept) {
		t.Fatalf("create through the fault: err = %v, want a kept run", err)
	}
	failedAfter := time.Since(start)
	p.SetRules(nil)
	start = time.Now()
	res, stats, err := runner.Resume(ctx, "scale-create")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("create: failed after %.1f s; resumed in %.1f s: %d worker parts, %d built before the failure, %d built by the resume, %d built twice (%.2f %%); %d batches run, %d kept",
		failedAfter.Seconds(), time.Since(start).Seconds(), stats.Parts, stats.Listed, stats.Built, stats.Rebuilt, 100*float64(stats.Rebuilt)/float64(stats.Parts), stats.BatchesRun, stats.BatchesKept)
	if float64(stats.Rebuilt) > maxRedone*float64(stats.Parts) || stats.Listed < stats.Parts/2 {
		t.Errorf("create resume: %+v; want at most %.0f %% of the parts built twice, most built before the fault", stats, 100*maxRedone)
	}
	if res.Output.Stats.Entries != n {
		t.Errorf("the archive has %d entries, want %d", res.Output.Stats.Entries, n)
	}
	path := filepath.Join(t.TempDir(), "all.zip")
	srv.DownloadFile(t, "dst", "all.zip", path)
	want := make([]zipcheck.Want, n)
	for i := range n {
		want[i] = zipcheck.WantBytes(key(i)[len("in/"):], body(i))
	}
	zipcheck.Check(t, path, want)
	for _, l := range srv.Leftovers(t, "work", "dst") {
		t.Errorf("create left behind: %s", l)
	}

	// The extract of that archive, read and put (small entries), 8 jobs at once.
	before := n * 8 / 10
	p.SetRules([]fp.Rule{{Ops: []fp.Op{fp.PutObject}, Bucket: "dst", Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: before}})
	xreq := extract.Request{Bucket: "dst", Key: "all.zip", DestBucket: "dst", Prefix: "out/", Workers: 8, WorkBucket: "work", Execution: "scale-extract", Keep: time.Hour}
	start = time.Now()
	_, err = extract.Run(ctx, c, xreq, nil)
	if !errors.As(err, &kept) {
		t.Fatalf("extract through the fault: err = %v, want a kept run", err)
	}
	failedAfter = time.Since(start)
	written := lastModified(t, srv, "dst", "out/")
	p.SetRules(nil)
	start = time.Now()
	xres, xstats, err := extract.Resume(ctx, c, extract.ResumeRequest{WorkBucket: "work", Execution: "scale-extract", Keep: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	after := lastModified(t, srv, "dst", "out/")
	twice := 0
	for k, m := range written {
		if !after[k].Equal(m) {
			twice++
		}
	}
	t.Logf("extract: failed after %.1f s with %d of %d objects written; resumed in %.1f s: %d batches run (%d objects, %d of them written before), %d kept, %d objects written twice (%.2f %%)",
		failedAfter.Seconds(), len(written), n, took.Seconds(), xstats.BatchesRun, xstats.ObjectsRun, xstats.Present, xstats.BatchesKept, twice, 100*float64(twice)/float64(n))
	if float64(twice) > maxRedone*float64(n) || len(xres.Objects) != n {
		t.Errorf("extract resume: %d objects written twice, %d in the result; want at most %.0f %% and all %d", twice, len(xres.Objects), 100*maxRedone, n)
	}
	for i := range n {
		if i%97 == 0 || i == n-1 { // a sample read back; the sizes of all are checked below
			if got := srv.GetObject(t, "dst", "out/"+key(i)[len("in/"):]); string(got) != string(body(i)) {
				t.Fatalf("out/%s: %d bytes differ from the entry's %d", key(i)[len("in/"):], len(got), len(body(i)))
			}
		}
	}
	if len(after) != n+1 { // the objects and the report
		t.Errorf("%d objects under out/, want the %d entries and the report", len(after), n)
	}
	for _, l := range srv.Leftovers(t, "work", "dst") {
		t.Errorf("extract left behind: %s", l)
	}
}

// lastModified is every object under prefix with when it was written.
func lastModified(t *testing.T, srv *s3test.Server, bucket, prefix string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	p := s3.NewListObjectsV2Paginator(srv.Client(t), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToTime(o.LastModified)
		}
	}
	return out
}
