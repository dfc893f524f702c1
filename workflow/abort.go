package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// AborterS3 is what the abort handler needs of S3.
type AborterS3 interface {
	uploadAborter
	uploadLister
	objectDeleter
	archiveDiscarder // a failed split run's archives completed
}

// Aborter cleans up after a failed execution: the multipart upload (aborted
// until no part is left) and the work prefix.
type Aborter struct {
	S3     AborterS3
	Config Config
	Log    *slog.Logger
	// Sleep waits between abort attempts (tests shorten it).
	Sleep func(time.Duration)
}

// AbortInput is the Abort state's payload (stepfn's: extract's Abort takes
// the same).
type AbortInput = stepfn.AbortInput

// AbortOutput is the root cause the execution fails with, and what was cleaned.
type AbortOutput struct {
	Error         string `json:"error"`
	Cause         string `json:"cause"`
	UploadAborted bool   `json:"uploadAborted"`
	// ArchivesDeleted are the archives (a split run's, or the one) its
	// finalizer had completed, or was completing, before the run failed: a
	// failed run leaves no archive.
	ArchivesDeleted int `json:"archivesDeleted,omitempty"`
	WorkDeleted     int `json:"workObjectsDeleted"`
}

// caught is a Step Functions error as a Catch records it.
type caught struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Handle cleans up. It is safe to run more than once.
func (a *Aborter) Handle(ctx context.Context, in AbortInput) (*AbortOutput, error) {
	cfg := a.Config.Defaults()
	log := a.logger().With("execution", in.Execution)
	var cause caught
	_ = json.Unmarshal(in.Error, &cause)
	out := &AbortOutput{Error: cause.Error, Cause: cause.Cause}
	if out.Error == "" {
		out.Error = "Error"
	}
	if in.Execution == "" || cfg.WorkBucket == "" {
		return out, fmt.Errorf("abort needs the execution name and the work bucket to find what to clean")
	}
	// What to clean comes from the deployment and from what the planner
	// recorded, never from the failed state: when planning fails, that is
	// the user's request, and it may name anything.
	bucket, prefix := cfg.WorkBucket, cfg.workPrefix(in.Execution)
	rec, err := readUploadRecord(ctx, a.S3, bucket, prefix)
	if err != nil {
		return out, err
	}
	if rec != nil && rec.Destination.Bucket != "" {
		// One upload, or a split run's, one an archive.
		uploads := rec.Archives
		if rec.UploadID != "" {
			uploads = append(uploads, plan.Upload{Key: rec.Destination.Key, UploadID: rec.UploadID})
		}
		// gone are the archives (by index; 0 for one) whose upload S3 no
		// longer knew: completed, or never made. Only those may have left
		// an archive.
		gone := map[int]bool{}
		for k, u := range uploads {
			if u.UploadID == "" {
				continue // its create failed
			}
			found, err := a.abortUpload(ctx, rec.forArchive(&u))
			if err != nil {
				return out, err
			}
			gone[k] = !found
			out.UploadAborted = true
		}
		if out.ArchivesDeleted, err = discardArchives(ctx, a.S3, rec, gone); err != nil {
			return out, err
		}
	}
	if strings.HasPrefix(out.Error, "States.") {
		// A failed Distributed Map reports only that too many batches
		// failed; the batches' own errors are in its results.
		if e, c, ok := stepfn.FirstFailedBatch(ctx, a.S3, bucket, prefix+"map/"); ok {
			out.Error, out.Cause = e, c
		}
	}
	if _, err := abortUploadsUnder(ctx, a.S3, bucket, prefix); err != nil {
		return out, err
	}
	if out.WorkDeleted, err = deletePrefix(ctx, a.S3, bucket, prefix); err != nil {
		return out, err
	}
	log.Info("aborted", "uploadAborted", out.UploadAborted, "workObjectsDeleted", out.WorkDeleted, "error", out.Error, "cause", out.Cause)
	return out, nil
}

func (a *Aborter) logger() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// abortUpload aborts until S3 no longer knows the upload: parts still being
// uploaded when the first abort lands can otherwise survive it. found says
// whether the upload was there to abort (not completed).
func (a *Aborter) abortUpload(ctx context.Context, job *Job) (found bool, err error) {
	d := job.Destination
	sleep := a.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	stillThere := fmt.Errorf("multipart upload %s of %s still exists after 5 aborts", job.UploadID, d.URI())
	again := s3x.Retry{Attempts: 5, Backoff: s3x.Linear(time.Second),
		Retryable: func(err error) bool { return err == stillThere },
		Sleep:     func(_ context.Context, d time.Duration) error { sleep(d); return nil }}
	err = again.Do(ctx, func(attempt int) error {
		_, err := a.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		if err != nil && !s3x.NotFound(err) {
			return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
		}
		if attempt == 1 {
			found = err == nil
		}
		_, err = a.S3.ListParts(ctx, &s3.ListPartsInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		if err != nil && s3x.NotFound(err) {
			return nil
		}
		return stillThere
	})
	return found, err
}
