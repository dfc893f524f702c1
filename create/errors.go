package create

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"

	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// Each condition the state machine tells apart has a Go type of its own,
// and internal/stepfn names the rule and the stepfn.Type* names ErrorEquals
// spells. errorTypes lists in order the kinds ErrorType looks for, and the
// first one in err's chain names it.
var errorTypes = []stepfn.ErrorKind{
	{Name: stepfn.TypeRequestError, Is: stepfn.IsA[*failure.RequestError]},
	{Name: stepfn.TypeSourceChangedError, Is: stepfn.IsA[*failure.SourceChangedError]},
	{Name: stepfn.TypeChecksumMismatchError, Is: func(err error) bool {
		return stepfn.IsA[*failure.ChecksumMismatchError](err)
	}},
	{Name: stepfn.TypeDestinationExistsError, Is: stepfn.IsA[*failure.DestinationExistsError]},
	{Name: stepfn.TypeLimitError, Is: stepfn.IsA[*failure.LimitError]},
	{Name: stepfn.TypeRefusedError, Is: stepfn.IsA[*RefusedError]},
	{Name: stepfn.TypeDeadlineError, Is: stepfn.IsA[*DeadlineError]},
	{Name: stepfn.TypeUploadRestartError, Is: stepfn.IsA[*UploadRestartError]},
	{Name: stepfn.TypeTransientError, Is: stepfn.IsA[*stepfn.TransientError]},
}

// ErrorTypes returns the names ErrorType can report besides TypeUntyped.
func ErrorTypes() []string {
	names := make([]string, len(errorTypes))
	for i, t := range errorTypes {
		names[i] = t.Name
	}
	return names
}

// ErrorType returns the error type the state machine sees for err. It is the
// first of ErrorTypes, in that order, found anywhere in its chain, or
// TypeUntyped.
func ErrorType(err error) string { return stepfn.NameOf(err, errorTypes) }

func requestError(format string, a ...any) *failure.RequestError {
	return failure.Request("", format, a...)
}

// DeadlineError says a worker stopped before its Lambda deadline with parts
// left. A retry builds the batch again, since parts are idempotent.
type DeadlineError struct{ Done, Left int }

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("stopped before the deadline with %d of %d parts built; retry the batch", e.Done, e.Done+e.Left)
}

// UploadRestartError says S3 answered the archive's conditional completion
// 409 ConditionalRequestConflict because another operation on the key met
// it. The upload is over, and S3 says to start it again and upload every
// part anew. The same completion cannot succeed, so no Task retries it. The
// RestartUpload state and the Runner call Planner.RestartUpload and build
// the parts anew, at most maxUploadRestarts times.
type UploadRestartError struct {
	Destination string
	Err         error
}

func (e *UploadRestartError) Error() string {
	return fmt.Sprintf("S3 answered the completion of %s 409 ConditionalRequestConflict, which ends the upload; start it again: %v", e.Destination, e.Err)
}

func (e *UploadRestartError) Unwrap() error { return e.Err }

// Retryable reports whether err may heal on retry, which is whether the
// state machine retries its ErrorType.
func Retryable(err error) bool {
	return slices.Contains(stepfn.RetryableTypes, ErrorType(err))
}

// s3Error classifies an S3 error from op on bucket/key. When source is true,
// a failed If-Match or a vanished source becomes failure.SourceChangedError.
// A permanent refusal such as out of space, not implemented or denied becomes
// RefusedError, and what s3err.Transient calls transient becomes
// stepfn.TransientError. The rest keep their message, with context.
func s3Error(op, bucket, key string, source bool, err error) error {
	if err == nil {
		return nil
	}
	// A cancellation by the caller is not S3's doing. A deadline is
	// different, because an HTTP client's response timeout also matches
	// context.DeadlineExceeded, and a request that timed out may well
	// succeed when tried again.
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err)
	}
	status, code := s3err.Status(err)
	if r := refused(fmt.Sprintf("%s s3://%s/%s", op, bucket, key), status, code, err); r != nil {
		return r
	}
	switch {
	case source && (status == http.StatusPreconditionFailed || code == "PreconditionFailed" || code == "NoSuchKey" ||
		status == http.StatusNotFound && (code == "" || code == "NotFound")): // HEAD answers a bare 404
		return &failure.SourceChangedError{Bucket: bucket, Key: key, Err: err}
	case s3err.Transient(err):
		if advice := s3rate.SlowDownAdvice(err, bucket, key); advice != "" {
			err = fmt.Errorf("%w; %s", err, advice)
		}
		return &stepfn.TransientError{Op: fmt.Sprintf("%s s3://%s/%s", op, bucket, key), Err: err}
	}
	return fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err)
}
