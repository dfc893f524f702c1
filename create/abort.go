package create

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// Aborter cleans up after a failed execution. It aborts the multipart upload
// until no part is left and deletes the work prefix.
type Aborter struct {
	S3     S3
	Config Config
	Log    *slog.Logger
	// Sleep waits between abort attempts. Tests shorten it.
	Sleep func(time.Duration)
}

// AbortInput is the Abort state's payload, stepfn's, which extract's Abort
// takes too.
type AbortInput = stepfn.AbortInput

// AbortOutput is the root cause the execution fails with, and what was cleaned.
type AbortOutput struct {
	Error         string `json:"error"`
	Cause         string `json:"cause"`
	UploadAborted bool   `json:"uploadAborted"`
	// ArchivesDeleted counts the archives, a split run's or the one, that
	// the finalizer had completed or was completing before the run failed.
	// A failed run leaves no archive.
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
	log := logger(a.Log).With("execution", in.Execution)
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
	// recorded, never from the failed state. When planning fails, that is
	// the user's request, and it may name anything.
	bucket, prefix := cfg.WorkBucket, cfg.workPrefix(in.Execution)
	rec, err := readUploadRecord(ctx, a.S3, bucket, prefix)
	if err != nil {
		return out, err
	}
	if rec != nil && rec.Destination.Bucket != "" {
		// One upload, or a split run's uploads, one for each archive.
		uploads := rec.Archives
		if rec.UploadID != "" {
			uploads = append(uploads, plan.Upload{Key: rec.Destination.Key, UploadID: rec.UploadID})
		}
		// gone holds the indexes, 0 for one archive, of the archives whose
		// upload S3 did not know, completed or never made. Only those may
		// have left an archive.
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

// abortUpload aborts the upload until S3 does not know it, since parts still
// being uploaded when the first abort lands can otherwise survive it. found
// says whether the upload was there to abort, that is, not completed.
func (a *Aborter) abortUpload(ctx context.Context, job *Job) (found bool, err error) {
	d := job.Destination
	sleep := a.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	stillThere := fmt.Errorf("multipart upload %s of %s still exists after 5 aborts", job.UploadID, d.URI())
	again := s3err.Retry{Attempts: 5, Backoff: s3err.Linear(time.Second),
		Retryable: func(err error) bool { return err == stillThere },
		Sleep:     func(_ context.Context, d time.Duration) error { sleep(d); return nil }}
	err = again.Do(ctx, func(attempt int) error {
		_, err := a.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		if err != nil && !s3err.NotFound(err) {
			return s3Error("AbortMultipartUpload", d.Bucket, d.Key, false, err)
		}
		if attempt == 1 {
			found = err == nil
		}
		_, err = a.S3.ListParts(ctx, &s3.ListPartsInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: &job.UploadID})
		if err != nil && s3err.NotFound(err) {
			return nil
		}
		return stillThere
	})
	return found, err
}

// discardArchives deletes the archives of a failed run that its finalizer
// recorded as completed or completing. It deletes each only while it is
// still the object this run completed, by its ETag or its size and CRC-32,
// and leaves another writer's alone.
//
// Only the archives in gone, whose upload was gone when Abort came, are
// looked for. One whose upload Abort aborted was never completed, and a
// HEAD of a missing key needs s3:ListBucket.
func discardArchives(ctx context.Context, c S3, rec *uploadRecord, gone map[int]bool) (int, error) {
	bucket, workBucket, workPrefix := rec.Destination.Bucket, rec.WorkBucket, rec.WorkPrefix
	deleted := 0
	archives := len(rec.Archives)
	if archives == 0 && rec.UploadID != "" {
		archives = 1
	}
	for k := range archives {
		if !gone[k] {
			continue
		}
		doc, err := getBytes(ctx, c, workBucket, doneKey(workPrefix, k), 1<<20)
		if s3err.NotFound(err) {
			continue
		}
		var done completedArchive
		if err == nil {
			err = json.Unmarshal(doc, &done)
		}
		if err != nil {
			return deleted, fmt.Errorf("the record of archive %d: %w", k+1, err)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &done.Key, ChecksumMode: types.ChecksumModeEnabled})
		if s3err.NotFound(err) || err == nil && !done.ours(h) {
			continue
		}
		if err != nil {
			return deleted, s3Error("HeadObject", bucket, done.Key, false, err)
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &done.Key}); err != nil {
			return deleted, s3Error("DeleteObject", bucket, done.Key, false, err)
		}
		deleted++
	}
	return deleted, nil
}
