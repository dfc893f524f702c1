package workflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/plan"
)

// Each condition the state machine tells apart (retry, or fail with a reason
// the user can act on) has a Go type of its own, and the type's name is what
// the state machine's Retry and Catch match (ErrorEquals).
//
// aws-lambda-go alone would report the returned error's own type name
// (pointer stripped, no unwrapping): a RequestError wrapped with
// fmt.Errorf would arrive as "wrapError". So every way a handler runs reports
// ErrorType(err) instead — the Lambdas (internal/lambdaenv.Start), the local
// Runner (local.go), the CLI's batch worker (cmd/s3zip) and the tests — and
// errors keep their type however much context is wrapped around them.
// workflow/errors_test.go holds every statemachine/*.asl.json to these names.

// The error type names, as ErrorEquals spells them.
const (
	TypeRequestError           = "RequestError"
	TypeSourceChangedError     = "SourceChangedError"
	TypeChecksumMismatchError  = "ChecksumMismatchError"
	TypeDestinationExistsError = "DestinationExistsError"
	TypeLimitError             = "LimitError"
	TypeRefusedError           = "RefusedError"
	TypeDeadlineError          = "DeadlineError"
	TypeTransientError         = "TransientError"
	// TypeUntyped is reported for an error of none of the types above; the
	// state machine does not retry it.
	TypeUntyped = "Error"

	// Reported by the extract workflow only (extract.ErrorType), which
	// otherwise reports the names above for the same conditions.
	TypeFormatError     = "FormatError"     // the archive is not a readable ZIP
	TypeIncompleteError = "IncompleteError" // the workers' results do not account for every job
)

// errorTypes are the types ErrorType looks for, in order: the first one in
// err's chain names it.
var errorTypes = []struct {
	name string
	is   func(error) bool
}{
	{TypeRequestError, isA[*RequestError]},
	{TypeSourceChangedError, isA[*SourceChangedError]},
	{TypeChecksumMismatchError, func(err error) bool { return isA[*ChecksumMismatchError](err) || isA[*plan.CRCMismatchError](err) }},
	{TypeDestinationExistsError, isA[*DestinationExistsError]},
	{TypeLimitError, isA[*LimitError]},
	{TypeRefusedError, isA[*RefusedError]},
	{TypeDeadlineError, isA[*DeadlineError]},
	{TypeTransientError, isA[*TransientError]},
}

func isA[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// ErrorTypes are the names ErrorType can report besides TypeUntyped.
func ErrorTypes() []string {
	names := make([]string, len(errorTypes))
	for i, t := range errorTypes {
		names[i] = t.name
	}
	return names
}

// ExtractOnlyTypes are the names the extract workflow's handlers report
// besides ErrorTypes(); extract's tests hold extract.ErrorType to the two.
var ExtractOnlyTypes = []string{TypeFormatError, TypeIncompleteError}

// RetryableTypes are the error types that may heal on retry: every worker
// Task of the state machine retries them, and nothing else of ours.
var RetryableTypes = []string{TypeTransientError, TypeDeadlineError}

// ErrorType is the error type the state machine sees for err: the first of
// ErrorTypes() (in that order) found anywhere in its chain, or TypeUntyped.
func ErrorType(err error) string {
	for _, t := range errorTypes {
		if t.is(err) {
			return t.name
		}
	}
	return TypeUntyped
}

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
	return fmt.Sprintf("source s3://%s/%s changed or was deleted after planning (its ETag no longer matches); run again: %v", e.Bucket, e.Key, e.Err)
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

// TransientError is an S3 failure that may heal (5xx, throttling, network)
// that the SDK's own retries did not overcome; the state machine retries it.
type TransientError struct {
	Op  string
	Err error
}

func (e *TransientError) Error() string {
	return fmt.Sprintf("%s: %v (transient; retrying may help)", e.Op, e.Err)
}
func (e *TransientError) Unwrap() error { return e.Err }

// DeadlineError says a worker stopped before its Lambda deadline with parts
// left; a retry builds the batch again (parts are idempotent).
type DeadlineError struct{ Done, Left int }

func (e *DeadlineError) Error() string {
	return fmt.Sprintf("stopped before the deadline with %d of %d parts built; retry the batch", e.Done, e.Done+e.Left)
}

// Retryable reports whether err may heal on retry: whether the state
// machine retries its ErrorType.
func Retryable(err error) bool {
	return slices.Contains(RetryableTypes, ErrorType(err))
}

// s3Error classifies an S3 error from op on bucket/key: a failed If-Match or a
// vanished source becomes SourceChangedError (when source is true), a
// permanent refusal (out of space, not implemented, denied) RefusedError,
// other server errors and throttling TransientError, the rest keep their
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
	case status >= 500 || status == http.StatusTooManyRequests || s3ref.MayHeal(code) || (status == 0 && code == ""):
		return &TransientError{Op: fmt.Sprintf("%s s3://%s/%s", op, bucket, key), Err: err}
	}
	return fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err)
}

// isNotFound reports whether err says the object or upload does not exist.
func isNotFound(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return true
	}
	return s3ref.IsCode(err, "NoSuchKey", "NotFound", "NoSuchUpload")
}
