package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// AbortInput is the Abort state's payload, as for create. It holds the
// state when the failure was caught, the request or the extraction, with
// the error and the execution.
type AbortInput = stepfn.AbortInput

// AbortOutput is the root cause for the Fail state, and what was removed.
type AbortOutput struct {
	Error string `json:"error"`
	Cause string `json:"cause"`
	// UploadsAborted, ObjectsDeleted and WorkDeleted count the uploads,
	// extracted objects and work objects this Abort removed.
	UploadsAborted int `json:"uploadsAborted"`
	ObjectsDeleted int `json:"objectsDeleted"`
	WorkDeleted    int `json:"workDeleted"`
}

// Aborter is the Abort state's handler.
type Aborter struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Handle undoes a failed execution. It aborts the multipart uploads of the
// planned keys begun since the execution started, deletes the objects
// under the destination that carry this execution's metadata and were not
// there before it, and deletes the work prefix. Each delete has If-Match on
// the ETag it saw, so a concurrent writer's object is never deleted. It is
// idempotent.
func (a *Aborter) Handle(ctx context.Context, in AbortInput) (*AbortOutput, error) {
	cfg := a.Config.Defaults()
	var cause struct{ Error, Cause string }
	_ = json.Unmarshal(in.Error, &cause)
	execution := in.Execution
	var ex Extraction
	_ = json.Unmarshal(in.State, &ex)
	if ex.Execution != "" {
		execution = ex.Execution
	}
	if execution == "" {
		return nil, requestError("abort: no execution name")
	}
	workPrefix := cfg.ExecutionPrefix(execution)
	if ex.WorkPrefix != "" {
		workPrefix = ex.WorkPrefix
	}
	workBucket := cfg.WorkBucket
	if ex.WorkBucket != "" {
		workBucket = ex.WorkBucket
	}
	if cause.Error == "States.ExceedToleratedFailureThreshold" {
		if e, c, ok := stepfn.FirstFailedBatch(ctx, a.S3, workBucket, workPrefix+"map/"); ok {
			cause.Error, cause.Cause = e, c
		}
	}
	out := &AbortOutput{Error: cause.Error, Cause: cause.Cause}
	if ex.JobsKey != "" && ex.DestBucket != "" {
		var err error
		if out.UploadsAborted, out.ObjectsDeleted, err = undoWrites(ctx, a.S3, &ex); err != nil {
			return nil, err
		}
		logf(a.Log).Info("extraction aborted", "execution", execution, "uploads", out.UploadsAborted, "deleted", out.ObjectsDeleted, "error", cause.Error)
	}
	var err error
	if out.WorkDeleted, err = under(workBucket, workPrefix).Delete(ctx, a.S3); err != nil {
		return nil, err
	}
	if out.Error == "" {
		out.Error = "Error"
	}
	return out, nil
}

// AbortDead undoes an execution whose process was killed before it could
// abort, as by kill -9 of the CLI. It runs the Abort of the state its
// planner kept in the work prefix, or of the work prefix alone when it
// planned nothing.
func (a *Aborter) AbortDead(ctx context.Context, execution string) (*AbortOutput, error) {
	cfg := a.Config.Defaults()
	state, err := getWork(ctx, a.S3, cfg.WorkBucket, cfg.ExecutionPrefix(execution)+extractionName)
	if err != nil && !s3err.NotFound(err) {
		return nil, err
	}
	return a.Handle(ctx, AbortInput{State: state, Execution: execution,
		Error: json.RawMessage(`{"Error":"DeadRun","Cause":"cleaned up after a run that was killed"}`)})
}

// undoWrites aborts the execution's open uploads and deletes the objects it
// wrote where there was none before. Objects an --overwrite run replaced
// keep their new content, since deleting them would lose what was there.
// It returns how many uploads it aborted and objects it deleted.
func undoWrites(ctx context.Context, c Client, ex *Extraction) (uploads, deleted int, err error) {
	// Without the jobs, never written or lost, every key under the prefix
	// is looked at. Only this execution's are touched, and none at all in
	// an --overwrite run, which cannot tell which of them it replaced.
	planned, fresh := map[string]bool{ex.reportKey(): true}, map[string]bool{}
	if !ex.ReplacesReport {
		fresh[ex.reportKey()] = true
	}
	err = eachPlanned(ctx, c, ex, func(it plannedItem) {
		planned[it.Key] = true
		if !it.Replaces {
			fresh[it.Key] = true
		}
	})
	switch {
	case err == nil:
	case !s3err.NotFound(err):
		return 0, 0, err
	case ex.Overwrite:
		planned, fresh = nil, map[string]bool{}
	default:
		planned, fresh = nil, nil
	}
	var ofRun func(string) bool // nil means any key
	if planned != nil {
		ofRun = func(key string) bool { return planned[key] }
	}
	if uploads, err = sweepUploads(ctx, c, ex, ofRun); err != nil {
		return 0, 0, err
	}
	deleted, err = deleteOwn(ctx, c, ex, fresh)
	return uploads, deleted, err
}

// sweepUploads aborts the multipart uploads under the destination prefix
// of the given keys, or of any key when nil, begun since the execution
// started, and says how many.
func sweepUploads(ctx context.Context, c Client, ex *Extraction, ofRun func(key string) bool) (int, error) {
	d := ex.DestBucket
	var errs []error
	n := 0
	err := under(d, ex.Prefix).EachUpload(ctx, c, func(u types.MultipartUpload) error {
		if ofRun != nil && !ofRun(aws.ToString(u.Key)) || u.Initiated != nil && u.Initiated.Before(ex.Started) {
			return nil
		}
		_, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d, Key: u.Key, UploadId: u.UploadId})
		switch {
		case err == nil:
			n++
		case !s3err.IsCode(err, "NoSuchUpload"):
			errs = append(errs, fmt.Errorf("abort upload of s3://%s/%s: %w", d, aws.ToString(u.Key), err))
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, classifyS3(errors.Join(errs...))
}

// deleteOwn deletes the objects under the destination prefix whose
// metadata names this execution, among keys or any key when nil, each only
// if its ETag is still the one seen.
func deleteOwn(ctx context.Context, c Client, ex *Extraction, keys map[string]bool) (int, error) {
	all, err := under(ex.DestBucket, ex.Prefix).Keys(ctx, c)
	if err != nil {
		return 0, err
	}
	var cand []string
	for _, k := range all {
		if keys == nil || keys[k] {
			cand = append(cand, k)
		}
	}
	var mu sync.Mutex
	n := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range cand {
		g.Go(func() error {
			etag, ours, err := owner(gctx, c, ex.DestBucket, k, ex.Execution)
			if err != nil || !ours {
				return err
			}
			_, err = c.DeleteObject(gctx, &s3.DeleteObjectInput{Bucket: &ex.DestBucket, Key: &k, IfMatch: &etag})
			if err != nil && !s3err.NotFound(err) {
				if s3err.IsCode(err, "PreconditionFailed") {
					return nil // replaced since, so someone else's
				}
				return classifyS3(fmt.Errorf("delete s3://%s/%s: %w", ex.DestBucket, k, err))
			}
			mu.Lock()
			n++
			mu.Unlock()
			return nil
		})
	}
	return n, g.Wait()
}

// owner returns an object's ETag and whether this execution wrote it.
func owner(ctx context.Context, c Client, bucket, key, execution string) (string, bool, error) {
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if s3err.NotFound(err) {
			return "", false, nil
		}
		return "", false, classifyS3(fmt.Errorf("head s3://%s/%s: %w", bucket, key, err))
	}
	return aws.ToString(h.ETag), h.Metadata[ExecutionMetadata] == execution, nil
}
