package workflow

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

// copiesInFlight counts the UploadPartCopy requests in flight at once.
// Each waits, up to hold, for want of them to be in flight, so that a
// worker keeping fewer shows it by its most, not by luck of timing.
type copiesInFlight struct {
	*fakeS3
	want int
	hold time.Duration

	mu      sync.Mutex
	now     int
	most    int
	reached chan struct{}
	closed  bool
}

func (c *copiesInFlight) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, opts ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	if c.now == c.want && c.most == c.want && !c.closed {
		close(c.reached)
		c.closed = true
	}
	c.mu.Unlock()
	select {
	case <-c.reached:
	case <-time.After(c.hold):
	}
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	return c.fakeS3.UploadPartCopy(ctx, in, opts...)
}

// The worker builds as many parts at once as the job says (the plan's
// Fit.InFlight, which its prediction assumed), not the deployment's
// PART_CONCURRENCY.
func TestWorkerKeepsTheJobsPartsInFlight(t *testing.T) {
	sizes := make([]int64, 16)
	for i := range sizes {
		sizes[i] = 11 * plan.MiB // a streamed prefix and a carried copy each
	}
	f, in := batch(t, sizes...)
	copies := 0
	for _, it := range in.Items {
		copies += len(it.Carried)
	}
	if copies < 12 {
		t.Fatalf("the batch carries %d copies; the test needs at least 12", copies)
	}
	in.BatchInput.Job.PartsInFlight = 12
	c := &copiesInFlight{fakeS3: f, want: 12, hold: 300 * time.Millisecond, reached: make(chan struct{})}
	w := &Worker{S3: c, Config: Config{PartConcurrency: 2}}
	if _, err := w.Build(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if c.most != 12 {
		t.Errorf("at most %d parts' copies in flight at once; the job says 12 (the deployment's PART_CONCURRENCY is 2)", c.most)
	}
}

// The planner writes the plan's Fit into the job: the Map runs the batches
// the plan was priced with, on no more workers than have a batch, and each
// worker keeps the parts in flight the prediction assumed.
func TestJobCarriesThePlansFit(t *testing.T) {
	e := newEnv(t, mixedObjects("m/", s3test.ChecksumNone))
	for _, workers := range []int{1, 1000} {
		t.Run(fmt.Sprintf("workers-%d", workers), func(t *testing.T) {
			r := &Runner{S3: e.s3, Config: Config{WorkBucket: "work", DefaultMaxConcurrency: workers}}
			w := &Worker{S3: e.s3, Config: r.Config}
			var batches []BatchInput
			var mu sync.Mutex
			r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
				mu.Lock()
				batches = append(batches, in)
				mu.Unlock()
				return w.Build(ctx, in)
			}
			dest := fmt.Sprintf("fit-%d.zip", workers)
			res, err := r.Run(context.Background(), request("duo", "m/", dest, ""), fmt.Sprintf("fit-%d", workers))
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
