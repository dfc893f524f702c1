package create

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/s3zip/s3zip/plan"
)

// readLayout reads a job's plan without its entries, for the finalizer,
// whose streamEntries reads them an entry at a time.
func readLayout(ctx context.Context, c S3, job *Job) (*plan.Layout, error) {
	header, err := getBytes(ctx, c, job.WorkBucket, job.PlanKey, 64<<20)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	parts, err := getBytes(ctx, c, job.WorkBucket, job.PartsKey, 1<<30)
	if err != nil {
		return nil, fmt.Errorf("plan parts: %w", err)
	}
	return plan.DecodeLayout(header, bytes.NewReader(parts))
}

// discardSpool closes and deletes a file spooled to $TMPDIR, if file is not
// nil, because a warm Lambda's /tmp outlives the invocation.
func discardSpool(file *os.File) {
	if file != nil {
		file.Close()
		os.Remove(file.Name())
	}
}
