package create

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// putWatcher notes, for each object put, the file its body is read from
// (none: a buffer in memory).
type putWatcher struct {
	*s3.Client
	mu    sync.Mutex
	files map[string]string // key → the body's file
}

func (c *putWatcher) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.mu.Lock()
	if f, ok := in.Body.(interface{ Name() string }); ok { // an *os.File, or a document spooled to one
		c.files[aws.ToString(in.Key)] = f.Name()
	}
	c.mu.Unlock()
	return c.Client.PutObject(ctx, in, opts...)
}

// The planner writes the entries and part-job files to $TMPDIR (the
// Lambda's /tmp, sized by infra) as the plan is encoded and puts them from
// there: held in memory they would be most of its memory at ten million
// entries. It leaves nothing behind there; a $TMPDIR it cannot write is an
// error that says where the files go.
func TestPlannerSpoolsPlanFiles(t *testing.T) {
	e := newEnv(t, []object{{"in/a.txt", 1000, s3test.ChecksumCRC32}, {"in/b.txt", 2000, s3test.ChecksumCRC32}})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	c := &putWatcher{Client: e.s3, files: map[string]string{}}
	pl := &Planner{S3: c, Config: Config{WorkBucket: "work"}}
	job, err := pl.Plan(context.Background(), PlanInput{Request: request("stream", "in/", "out/a.zip", ""), Execution: "exec-spool"})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{job.EntriesKey, job.PartsKey} {
		if f := c.files[key]; filepath.Dir(f) != tmp {
			t.Errorf("%s was put from %q, want a file in $TMPDIR %s", key, f, tmp)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the planner left %d files in $TMPDIR, first %s", len(left), left[0].Name())
	}
	entries := e.srv.GetObject(t, "work", job.EntriesKey)
	if n := strings.Count(string(entries), "\n"); n != 2 {
		t.Errorf("entries file has %d lines, want 2:\n%s", n, entries)
	}

	t.Setenv("TMPDIR", filepath.Join(tmp, "missing"))
	_, err = pl.Plan(context.Background(), PlanInput{Request: request("stream", "in/", "out/b.zip", ""), Execution: "exec-no-tmp"})
	if err == nil || !strings.Contains(err.Error(), "$TMPDIR") {
		t.Errorf("planning with $TMPDIR missing: %v, want an error naming $TMPDIR", err)
	}
}

// planFilesGetter is a work bucket holding one plan's files; reading the part
// jobs notes the live heap then, which readPlan reads after opening the
// entries file.
type planFilesGetter struct {
	S3    // what the test does not call: nil
	files map[string][]byte
	parts string
	heap  uint64 // live heap when the part jobs were first read
}

func (g *planFilesGetter) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b, ok := g.files[aws.ToString(in.Key)]
	if !ok {
		return nil, fmt.Errorf("no object %s", aws.ToString(in.Key))
	}
	var body io.Reader = bytes.NewReader(b)
	if aws.ToString(in.Key) == g.parts {
		body = &heapOnRead{Reader: body, heap: &g.heap}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(body)}, nil
}

type heapOnRead struct {
	io.Reader
	heap *uint64
}

func (h *heapOnRead) Read(p []byte) (int, error) {
	if *h.heap == 0 {
		*h.heap = liveHeap()
	}
	return h.Reader.Read(p)
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// readPlan (the finalizer's, and the planner's after a CRC round) decodes
// the entries file as it arrives: before it decodes anything it holds
// nothing of it (read whole first, it would be 2 GB at ten million
// entries, beside the plan it decodes).
func TestReadPlanStreamsEntries(t *testing.T) {
	entries, _ := plan.Synthetic("small", 200_000, 3)
	p, err := plan.Make(entries, plan.Options{Strategy: plan.StrategyStream, Workers: 100})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	job := &Job{WorkBucket: "work", PlanKey: "plan.json", EntriesKey: "entries.jsonl", PartsKey: "parts.jsonl"}
	g := &planFilesGetter{files: map[string][]byte{job.PlanKey: enc.Header, job.EntriesKey: enc.Entries, job.PartsKey: enc.Parts}, parts: job.PartsKey}
	entriesSize := len(enc.Entries)
	p, enc = nil, nil
	base := liveHeap()
	got, err := readPlan(context.Background(), g, job)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 200_000 {
		t.Fatalf("read back %d entries, want 200,000", len(got.Entries))
	}
	if held := int64(g.heap) - int64(base); held > int64(entriesSize)/8 {
		t.Errorf("readPlan held %d bytes before decoding an entries file of %d: it reads the file whole first", held, entriesSize)
	}
}

// The planner writes the plan's Fit into the job: the Map runs the batches
// the plan was priced with, on no more workers than have a batch, and each
// worker keeps the parts in flight the prediction assumed. Streamed from
// sources that store no CRC-32, the plan is written, its CRC-32s learned
// in a round of reads and the plan read back before the job is made: the
// fit goes with it.
func TestJobCarriesThePlansFit(t *testing.T) {
	e := newEnv(t, mixedObjects("m/", s3test.ChecksumNone))
	for _, c := range []struct {
		strategy string
		workers  int
	}{{"duo", 1}, {"duo", 1000}, {"stream", 1}, {"stream", 1000}} {
		strategy, workers := c.strategy, c.workers
		t.Run(fmt.Sprintf("%s-workers-%d", strategy, workers), func(t *testing.T) {
			r := &Runner{S3: e.s3, Config: Config{WorkBucket: "work", DefaultMaxConcurrency: workers}}
			w := &Worker{S3: e.s3, Config: r.Config}
			var batches []BatchInput
			var mu sync.Mutex
			r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
				mu.Lock()
				batches = append(batches, in)
				mu.Unlock()
				return w.Handle(ctx, in)
			}
			dest := fmt.Sprintf("fit-%s-%d.zip", strategy, workers)
			res, err := r.Run(context.Background(), request(strategy, "m/", dest, `,"partSize":5242880`), fmt.Sprintf("fit-%s-%d", strategy, workers))
			if err != nil {
				t.Fatal(err)
			}
			e.checkArchive(t, dest, "m/")
			job := res.Job
			if job.MaxConcurrency < 1 || job.MaxConcurrency > min(workers, len(batches)) {
				t.Errorf("job's maxConcurrency %d for %d workers and %d batches: want at most both", job.MaxConcurrency, workers, len(batches))
			}
			if job.PartsInFlight != plan.DefaultModel.Concurrency {
				t.Errorf("job's partsInFlight %d, want the model's %d, which the plan was priced with", job.PartsInFlight, plan.DefaultModel.Concurrency)
			}
			if workers == 1 && (len(batches) != 1 || job.PartsPerBatch < job.WorkerParts) {
				t.Errorf("one worker: %d batches of at most %d of the %d part jobs; want them all in one invocation", len(batches), job.PartsPerBatch, job.WorkerParts)
			}
		})
	}
}
