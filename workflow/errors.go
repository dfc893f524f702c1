package workflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// Each condition the state machine tells apart has a Go type of its own;
// internal/stepfn names the rule and the names ErrorEquals spells
// (stepfn.Type*). errorTypes are the kinds ErrorType looks for, in order:
// the first one in err's chain names it.
var errorTypes = []stepfn.ErrorKind{
	{Name: stepfn.TypeRequestError, Is: stepfn.IsA[*RequestError]},
	{Name: stepfn.TypeSourceChangedError, Is: stepfn.IsA[*SourceChangedError]},
	{Name: stepfn.TypeChecksumMismatchError, Is: func(err error) bool {
		return stepfn.IsA[*ChecksumMismatchError](err) || stepfn.IsA[*plan.CRCMismatchError](err)
	}},
	{Name: stepfn.TypeDestinationExistsError, Is: stepfn.IsA[*DestinationExistsError]},
	{Name: stepfn.TypeLimitError, Is: stepfn.IsA[*LimitError]},
	{Name: stepfn.TypeRefusedError, Is: stepfn.IsA[*RefusedError]},
	{Name: stepfn.TypeDeadlineError, Is: stepfn.IsA[*DeadlineError]},
	{Name: stepfn.TypeTransientError, Is: stepfn.IsA[*TransientError]},
}

// ErrorTypes are the names ErrorType can report besides TypeUntyped.
func ErrorTypes() []string {
	names := make([]string, len(errorTypes))
	for i, t := range errorTypes {
		names[i] = t.Name
	}
	return names
}

// ErrorType is the error type the state machine sees for err: the first of
// ErrorTypes() (in that order) found anywhere in its chain, or TypeUntyped.
func ErrorType(err error) string { return stepfn.NameOf(err, errorTypes) }

// RequestError says the request is wrong; Problems say what to fix.
type RequestError struct{ Problems []string }

func (e *RequestError) Error() string {
	if len(e.Problems) == 1 {
		return "bad request: " + e.Problems[0]
	}
	s := fmt.Sprintf("bad request (%d problems):", len(e.Problems))
	for _, p := range e.Problems {
		s += " " + p + ";"
	}
	return s[:len(s)-1]
}

func requestError(format string, a ...any) *RequestError {
	return &RequestError{[]string{fmt.Sprintf(format, a...)}}
}

// SourceChangedError says a source object changed or vanished after it was planned.
type SourceChangedError struct {
	Bucket, Key string
	Err         error
}

func (e *SourceChangedError) Error() string {
	why := "its ETag no longer matches"
	if status, code := s3ref.Status(e.Err); code != "" {
		why = "S3 answered " + code + ": " + why
	} else if status != 0 {
		why = fmt.Sprintf("S3 answered %d: %s", status, why)
	} else if e.Err != nil {
		why = e.Err.Error()
	}
	return fmt.Sprintf("source s3://%s/%s changed or was deleted after planning (%s); run again to archive the objects as they are now "+
		"(from an S3 Inventory report or a manifest that pins ETags: a newer one, or --source to list them now)", e.Bucket, e.Key, why)
}

func (e *SourceChangedError) Unwrap() error { return e.Err }

// ChecksumMismatchError says bytes do not have the checksum they must have.
type ChecksumMismatchError struct{ Msg string }

func (e *ChecksumMismatchError) Error() string { return e.Msg }

// DestinationExistsError says another object holds the archive's key: it
// existed and overwrite was not asked, or another writer took the key.
type DestinationExistsError struct {
	Bucket, Key string
	Msg         string // what happened, when it is not the plain case
}

func (e *DestinationExistsError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("destination s3://%s/%s: %s", e.Bucket, e.Key, e.Msg)
	}
	return fmt.Sprintf("destination s3://%s/%s already exists; set options.overwrite to replace it", e.Bucket, e.Key)
}

// LimitError says the archive does not fit a hard limit.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

// TransientError is an S3 failure that may heal; the state machine retries
// it. Extract reports it too, so it is stepfn's.
type TransientError = stepfn.TransientError

// DeadlineError says a worker stopped before its Lambda deadline with parts
// left; a retry builds the batch again (parts are idempotent).
type DeadlineError struct{ Done, Left int }

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("stopped before the deadline with %d of %d parts built; retry the batch", e.Done, e.Done+e.Left)
}

// Retryable reports whether err may heal on retry: whether the state
// machine retries its ErrorType.
func Retryable(err error) bool {
	return slices.Contains(stepfn.RetryableTypes, ErrorType(err))
}

// s3Error classifies an S3 error from op on bucket/key: a failed If-Match or a
// vanished source becomes SourceChangedError (when source is true), a
// permanent refusal (out of space, not implemented, denied) RefusedError,
// what s3x.Transient calls transient TransientError, the rest keep their
// message with context.
func s3Error(op, bucket, key string, source bool, err error) error {
	if err == nil {
		return nil
	}
	// Cancelled by the caller: not S3's doing. A deadline is different: an
	// HTTP client's response timeout also matches context.DeadlineExceeded,
	// and a request that timed out may well succeed when tried again.
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err)
	}
	status, code := s3ref.Status(err)
	if r := refused(fmt.Sprintf("%s s3://%s/%s", op, bucket, key), status, code, err); r != nil {
		return r
	}
	switch {
	case source && (status == http.StatusPreconditionFailed || code == "PreconditionFailed" || code == "NoSuchKey" ||
		status == http.StatusNotFound && (code == "" || code == "NotFound")): // HEAD answers a bare 404
		return &SourceChangedError{Bucket: bucket, Key: key, Err: err}
	case s3x.Transient(err):
		if advice := s3rate.SlowDownAdvice(err, bucket, key); advice != "" {
			err = fmt.Errorf("%w; %s", err, advice)
		}
		return &TransientError{Op: fmt.Sprintf("%s s3://%s/%s", op, bucket, key), Err: err}
	}
	return fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err)
}
