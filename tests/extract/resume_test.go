package extract_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// storedArchive is a ZIP of n STORED entries of a few KiB, and what it holds.
func storedArchive(t *testing.T, n int) ([]byte, map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	want := map[string][]byte{}
	for i := range n {
		name := fmt.Sprintf("d%02d/%04d.bin", i%10, i)
		body := s3test.Bytes(uint64(i), 1000+i*53%5000)
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		f.Write(body)
		want[name] = body
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

// An extraction whose writes fail with 500 InternalError from about 80 %
// of its entries on, past every retry, is kept (what it wrote and its work
// stay); Resume, the fault gone, runs only the batches that had not
// succeeded, writes again none of the objects already there, and the
// objects are byte for byte the entries, with nothing left behind.
func TestExtractResumeAfterTransientFailure(t *testing.T) {
	w := newWorld(t)
	const n = 300
	archive, want := storedArchive(t, n)
	w.srv.PutObject(t, "src", "many.zip", archive)
	p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: 9, SourceSize: w.srv.ObjectSize,
		Rules: []fp.Rule{{Ops: []fp.Op{fp.PutObject}, Bucket: "dst", Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: n * 8 / 10}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	through := w.srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	ctx := context.Background()
	req := extract.Request{Bucket: "src", Key: "many.zip", DestBucket: "dst", Prefix: "out/", Workers: 4, WorkBucket: "work",
		Execution: "x-kept", Keep: time.Hour, Options: extract.Options{ReadGroup: 32 << 10}}
	_, err = extract.Run(ctx, through, req, nil)
	var kept *stepfn.KeptError
	if !errors.As(err, &kept) || !extract.Resumable(err) {
		t.Fatalf("extract through the fault: err = %v, want a kept run failed by a transient error", err)
	}
	before := lastModified(t, w, "dst", "out/")
	if len(before) < n/2 || len(before) >= n {
		t.Fatalf("%d of %d objects written before the failure: the fault was meant to come at ~80 %%", len(before), n)
	}

	p.SetRules(nil)
	start := time.Now()
	res, stats, err := extract.Resume(ctx, through, extract.ResumeRequest{WorkBucket: "work", Execution: "x-kept", Keep: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := lastModified(t, w, "dst", "out/")
	rewritten := 0
	for k, m := range before {
		if !after[k].Equal(m) {
			rewritten++
		}
	}
	t.Logf("resume in %.2f s: %d objects, %d there before, %d in the %d batches run (%d of them there), %d batches kept, %d written twice",
		time.Since(start).Seconds(), stats.Objects, stats.Listed, stats.ObjectsRun, stats.BatchesRun, stats.Present, stats.BatchesKept, rewritten)
	if stats.Objects != n || stats.Listed != len(before) || stats.BatchesKept == 0 || stats.ObjectsRun == 0 {
		t.Errorf("resume counts %+v: want the %d objects, the %d already written, and batches both kept and run", stats, n, len(before))
	}
	if rewritten > 0 {
		t.Errorf("%d objects written twice: the resumed batches must find what their run wrote", rewritten)
	}
	if len(res.Objects) != n {
		t.Errorf("the result lists %d objects, want %d", len(res.Objects), n)
	}
	w.same(t, "out/", want)
	for _, l := range w.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}

// lastModified is every object under prefix with when it was written.
func lastModified(t *testing.T, w *world, bucket, prefix string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	p := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
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
