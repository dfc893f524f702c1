package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// AborterS3 is what the abort handler needs of S3.
type AborterS3 interface {
	uploadAborter
	objectDeleter
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

// AbortInput is the Abort state's payload: the state input at the failure
// (the job, or the request when planning failed) and the error.
type AbortInput struct {
	State     json.RawMessage `json:"state"`
	Error     json.RawMessage `json:"error"`
	Execution string          `json:"execution"`
}

// AbortOutput says what was cleaned.
type AbortOutput struct {
	UploadAborted bool `json:"uploadAborted"`
	WorkDeleted   int  `json:"workObjectsDeleted"`
}

// Abort cleans up. It is safe to run more than once.
func (a *Aborter) Abort(ctx context.Context, in AbortInput) (*AbortOutput, error) {
	cfg := a.Config.Defaults()
	var job Job
	_ = json.Unmarshal(in.State, &job) // the state is a job only when planning finished
	execution := in.Execution
	if execution == "" {
		execution = job.Execution
	}
	log := a.logger().With("execution", execution)
	out := &AbortOutput{}
	if job.UploadID != "" && job.Destination.Bucket != "" {
		if err := a.abortUpload(ctx, &job); err != nil {
			return out, err
		}
		out.UploadAborted = true
	}
	workBucket, prefix := job.WorkBucket, job.WorkPrefix
	if workBucket == "" {
		workBucket = cfg.WorkBucket
	}
	if prefix == "" && execution != "" {
		prefix = cfg.workPrefix(execution)
	}
	if workBucket != "" && prefix != "" {
		n, err := deletePrefix(ctx, a.S3, workBucket, prefix)
		if err != nil {
			return out, err
		}
		out.WorkDeleted = n
	}
	log.Info("aborted", "uploadAborted", out.UploadAborted, "workObjectsDeleted", out.WorkDeleted, "error", string(in.Error))
	return out, nil
}

func (a *Aborter) logger() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// abortUpload aborts until S3 no longer knows the upload: parts still being
// uploaded when the first abort lands can otherwise survive it.
func (a *Aborter) abortUpload(ctx context.Context, job *Job) error {
	d := job.Destination
	sleep := a.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	for attempt := 1; attempt <= 5; attempt++ {
		_, err := a.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		if err != nil && !isNotFound(err) {
			return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
		}
		_, err = a.S3.ListParts(ctx, &s3.ListPartsInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		if err != nil && isNotFound(err) {
			return nil
		}
		sleep(time.Duration(attempt) * time.Second)
	}
	return fmt.Errorf("multipart upload %s of %s still exists after 5 aborts", job.UploadID, d.URI())
}
