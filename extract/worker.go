package extract

import (
	"context"
	"fmt"
	"log/slog"

	"golang.org/x/sync/errgroup"
)

// BatchInput is one Distributed Map batch, the ItemBatcher's Items and its
// BatchInput, {"job.$": "$"}.
type BatchInput struct {
	Items      []Job `json:"Items"`
	BatchInput struct {
		Job Extraction `json:"job"`
	} `json:"BatchInput"`
}

// BatchOutput is what a batch wrote, which the ResultWriter keeps in S3.
type BatchOutput struct {
	Written    []Written `json:"written"`
	VerifyRead int64     `json:"verifyReadBytes,omitempty"`
}

// Worker is the Map's handler, which runs a batch of jobs.
type Worker struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Handle runs the batch's jobs, at most Config.Workers at once. Every object
// is written with If-None-Match: * unless overwriting, and every archive read
// and copy has If-Match on the planned ETag. A batch run again after a
// transient failure or a timeout finds the objects its last attempt wrote
// by their execution metadata and writes only the rest. On failure it
// aborts the uploads it has open and leaves what it wrote for Abort to delete.
func (w *Worker) Handle(ctx context.Context, in BatchInput) (*BatchOutput, error) {
	cfg := w.Config.Defaults()
	ex := &in.BatchInput.Job
	if ex.JobsKey == "" || ex.Archive.ETag == "" {
		return nil, requestError("batch input has no planned extraction (BatchInput.job)")
	}
	x := newExecutor(w.S3, ex)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Workers)
	for _, j := range in.Items {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err // failed or interrupted, so start no more jobs
			}
			if err := x.run(gctx, j); err != nil {
				return fmt.Errorf("job %d: %w", j.Index, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		x.abortOpen(context.WithoutCancel(ctx))
		return nil, err
	}
	return &BatchOutput{Written: x.sortedWritten(), VerifyRead: x.verifyRead.Load()}, nil
}
