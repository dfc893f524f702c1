package create

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// inFlight counts the requests of one operation (UploadPartCopy or
// UploadPart) in flight at once. Each waits, up to hold, for want of them to
// be in flight, so that a worker keeping fewer shows it by its most, not by
// luck of timing.
type inFlight struct {
	*fakeS3
	op   string
	want int
	hold time.Duration

	mu      sync.Mutex
	now     int
	most    int
	reached chan struct{}
	closed  bool
}

func (c *inFlight) enter(op string) func() {
	if op != c.op {
		return func() {}
	}
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	if c.now == c.want && !c.closed {
		close(c.reached)
		c.closed = true
	}
	c.mu.Unlock()
	select {
	case <-c.reached:
	case <-time.After(c.hold):
	}
	return func() { c.mu.Lock(); c.now--; c.mu.Unlock() }
}

func (c *inFlight) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, opts ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	defer c.enter("UploadPartCopy")()
	return c.fakeS3.UploadPartCopy(ctx, in, opts...)
}

func (c *inFlight) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	defer c.enter("UploadPart")()
	return c.fakeS3.UploadPart(ctx, in, opts...)
}

// The worker builds as many parts at once as the job says (the plan's
// Fit.InFlight, which its prediction assumed), not the deployment's
// PART_CONCURRENCY, which bounds only the upload parts among them (each
// holds its bytes and a fan-out of GETs).
func TestWorkerKeepsTheJobsPartsInFlight(t *testing.T) {
	sizes := make([]int64, 16)
	for i := range sizes {
		sizes[i] = 11 * plan.MiB // a streamed prefix and a carried copy each
	}
	f, in := batch(t, sizes...)
	var copies, uploads []plan.PartJob
	for _, it := range in.Items {
		copies = append(copies, it.Carried...)
		it.Carried, it.Carry = nil, 0
		uploads = append(uploads, it)
	}
	if len(copies) < 12 {
		t.Fatalf("the batch carries %d copies; the test needs at least 12", len(copies))
	}
	for _, c := range []struct {
		name, op string
		items    []plan.PartJob
		want     int
	}{
		{"copy-parts", "UploadPartCopy", copies, 12},
		{"upload-parts", "UploadPart", uploads, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			in.Items = c.items
			in.BatchInput.Job.PartsInFlight = 12
			counter := &inFlight{fakeS3: f, op: c.op, want: c.want, hold: 300 * time.Millisecond, reached: make(chan struct{})}
			w := &Worker{S3: counter, Config: Config{PartConcurrency: 2}}
			if _, err := w.Handle(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if counter.most != c.want {
				t.Errorf("at most %d %s parts in flight at once, want %d: the job says 12 parts, PART_CONCURRENCY 2 upload parts", counter.most, c.name, c.want)
			}
		})
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
