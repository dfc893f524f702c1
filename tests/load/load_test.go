// Package load_test builds big archives end to end and measures each
// handler's peak memory against the memory its Lambda is configured with
// (infra/lib/archive-workflow.ts).
//
// Each handler runs in this process the way its Lambda runs it: the planner
// once, the worker once per Distributed Map batch (8 part jobs, the
// deployment's ItemBatcher), the finalizer once, the abort once. Memory is
// sampled every millisecond from runtime/metrics (memory the Go runtime holds
// from the OS, which is what a Lambda's "Max Memory Used" follows); a
// handler's estimate is the runtime's floor at process start plus what the
// handler added over its starting point. The process's peak RSS (VmHWM,
// reset before each handler) is printed too; it includes the test's own data.
//
//	S3ZIP_LONG=1 go test -run 'Load' -v -timeout 60m ./tests/load/   (make test-load)
package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
	"github.com/s3zip/s3zip/plan"
)

// partsPerBatch is the deployment's batch size (the job's partsPerBatch by default).
const partsPerBatch = create.DefaultPartsPerBatch

func long(t *testing.T) {
	t.Helper()
	if os.Getenv("S3ZIP_LONG") != "1" {
		t.Skip("load case: run with S3ZIP_LONG=1 (make test-load)")
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// run is the state machine, one handler at a time, each measured.
func run(t *testing.T, c create.S3, cfg create.Config, request []byte, execution string) ([]measurement, *create.FinalizeOutput) {
	t.Helper()
	ctx := context.Background()
	var ms []measurement
	var job *create.Job
	m, err := measure("planner", func() (err error) {
		job, err = (&create.Planner{S3: c, Config: cfg, Log: quiet}).Plan(ctx, create.PlanInput{Request: request, Execution: execution})
		return err
	})
	if err != nil {
		t.Fatalf("planner: %v", err)
	}
	ms = append(ms, m)

	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &job.WorkBucket, Key: &job.PartsKey})
	if err != nil {
		t.Fatal(err)
	}
	items, err := plan.DecodeParts(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var children []stepfn.ChildResult
	worst := measurement{handler: "worker"}
	batches := 0
	for i := 0; i < len(items); i += partsPerBatch {
		var in create.BatchInput
		in.Items = items[i:min(i+partsPerBatch, len(items))]
		in.BatchInput.Job = *job
		var res *create.BatchResult
		m, err := measure("worker", func() (err error) {
			res, err = (&create.Worker{S3: c, Config: cfg, Log: quiet}).Handle(ctx, in)
			return err
		})
		if err != nil {
			t.Fatalf("worker batch %d: %v", batches, err)
		}
		if m.own() >= worst.own() {
			worst = m
		}
		doc, _ := json.Marshal(res)
		children = append(children, stepfn.ChildResult{Status: "SUCCEEDED", Output: string(doc)})
		batches++
	}
	worst.handler = fmt.Sprintf("worker (worst of %d)", batches)
	ms = append(ms, worst)

	in := create.FinalizeInput{Job: *job}
	if len(children) > 0 {
		in.Results = writeResults(t, c, job, children)
	}
	var fin *create.FinalizeOutput
	m, err = measure("finalizer", func() (err error) {
		fin, err = (&create.Finalizer{S3: c, Config: cfg, Log: quiet}).Handle(ctx, in)
		return err
	})
	if err != nil {
		t.Fatalf("finalizer: %v", err)
	}
	ms = append(ms, m)

	// The abort path on a plan of the same size: plan again to another
	// destination, then abort it (upload and the work prefix with the plan).
	req2 := bytes.Replace(request, []byte(`"key":"out/`), []byte(`"key":"aborted/`), 1)
	job2, err := (&create.Planner{S3: c, Config: cfg, Log: quiet}).Plan(ctx, create.PlanInput{Request: req2, Execution: execution + "-abort"})
	if err != nil {
		t.Fatalf("planner (for abort): %v", err)
	}
	state, _ := json.Marshal(job2)
	m, err = measure("abort", func() error {
		_, err := (&create.Aborter{S3: c, Config: cfg, Log: quiet}).Handle(ctx, create.AbortInput{State: state, Error: json.RawMessage(`{"Error":"Test","Cause":"load"}`), Execution: job2.Execution})
		return err
	})
	if err != nil {
		t.Fatalf("abort: %v", err)
	}
	ms = append(ms, m)
	return ms, fin
}

// writeResults writes the Distributed Map ResultWriter's layout.
func writeResults(t *testing.T, c create.S3, job *create.Job, children []stepfn.ChildResult) *stepfn.MapResults {
	t.Helper()
	d, err := stepfn.WriteResults[stepfn.ChildResult](context.Background(), stepfn.Put(c), stepfn.ResultLocation{Bucket: job.WorkBucket, Prefix: job.WorkPrefix + "map/", MapRunArn: "load"}, children, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &stepfn.MapResults{MapRunArn: "load", ResultWriterDetails: d}
}

func listRequest(bucket, prefix, key, strategy string) []byte {
	doc, _ := json.Marshal(map[string]any{
		"source":      map[string]any{"bucket": bucket, "prefix": prefix},
		"destination": map[string]any{"bucket": "dst", "key": key},
		"options":     map[string]any{"strategy": strategy},
	})
	return doc
}

// TestLoad100kEntriesEndToEnd: 100,000 tiny objects in versitygw, archived
// by the handlers, read back by every ZIP reader.
func TestLoad100kEntriesEndToEnd(t *testing.T) {
	long(t)
	const n = 100_000
	srv := s3test.Start(t)
	c := srv.Client(t, func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired })
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	// Stored with a CRC-32 (what SDKs and the CLI do by default), so the
	// planner learns every CRC from one HEAD per object.
	t0 := time.Now()
	body := func(i int) []byte { return []byte(fmt.Sprintf("object %d\n", i)) }
	var g errgroup.Group
	g.SetLimit(48)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			srv.PutObject(t, "src", fmt.Sprintf("load/%03d/%06d.txt", i%1000, i), body(i), s3test.WithChecksum(s3test.ChecksumCRC32))
			return nil
		})
	}
	g.Wait()
	t.Logf("uploaded %d objects in %s", n, time.Since(t0).Round(time.Second))

	cfg := create.Config{WorkBucket: "work"}.Defaults()
	t0 = time.Now()
	ms, fin := run(t, c, cfg, listRequest("src", "load/", "out/100k.zip", "duo"), "load-100k")
	t.Logf("workflow: %s; archive %d bytes, %d entries, ZIP64 %v, %d parts", time.Since(t0).Round(time.Millisecond),
		fin.Archive.Size, fin.Stats.Entries, fin.Stats.Zip64, fin.Stats.Parts)
	report(t, fmt.Sprintf("%d entries, end to end against versitygw", n), ms)

	want := make([]zipcheck.Want, 0, n)
	for i := 0; i < n; i++ {
		want = append(want, zipcheck.WantBytes(fmt.Sprintf("%03d/%06d.txt", i%1000, i), body(i)))
	}
	sort.Slice(want, func(a, b int) bool { return want[a].Name < want[b].Name })
	path := filepath.Join(t.TempDir(), "100k.zip")
	srv.DownloadFile(t, "dst", "out/100k.zip", path)
	t0 = time.Now()
	zipcheck.Check(t, path, want)
	t.Logf("readers: %s", time.Since(t0).Round(time.Millisecond))
	// Nothing left behind in the work bucket.
	left, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("work")})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Contents) > 0 {
		t.Errorf("%d work objects left, first %s", len(left.Contents), aws.ToString(left.Contents[0].Key))
	}
}

// TestLoad1MEntryPlan: a 1,000,000-entry archive planned, built and
// finalized by the handlers against an in-memory S3 (a local server cannot
// hold a million objects in reasonable time).
func TestLoad1MEntryPlan(t *testing.T) {
	long(t)
	const n = 1_000_000
	c := newSyntheticS3(n, t.TempDir())
	cfg := create.Config{WorkBucket: workBucket}.Defaults()
	t0 := time.Now()
	ms, fin := run(t, c, cfg, listRequest(srcBucket, "e/", "out/1m.zip", "duo"), "load-1m")
	t.Logf("workflow: %s; archive %d bytes, %d entries, ZIP64 %v, %d parts", time.Since(t0).Round(time.Millisecond),
		fin.Archive.Size, fin.Stats.Entries, fin.Stats.Zip64, fin.Stats.Parts)
	report(t, fmt.Sprintf("%d entries, handlers against an in-memory S3", n), ms)
	if fin.Stats.Entries != n {
		t.Errorf("archive has %d entries, want %d", fin.Stats.Entries, n)
	}
}
