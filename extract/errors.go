package extract

import (
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/archive"
	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// RequestError says the extract request is wrong; it says what to fix.
type RequestError struct{ Problems []string }

func (e *RequestError) Error() string {
	return "bad extract request: " + strings.Join(e.Problems, "; ")
}

// TransientError is an S3 failure that may heal (5xx, throttling, a lost
// connection) that the SDK's own retries did not overcome; the state
// machine retries the step. It is the create workflow's too (stepfn's).
type TransientError = stepfn.TransientError

// IncompleteError says the workers' results do not account for every
// planned object (a batch lost, an object missing): nothing is reported
// as extracted.
type IncompleteError struct{ Msg string }

func (e *IncompleteError) Error() string { return e.Msg }

// errorKinds are extract's conditions in the order ErrorType looks for them,
// named as the create workflow names the same condition (an ExistsError is
// a DestinationExistsError, a ChecksumError a ChecksumMismatchError).
var errorKinds = []stepfn.ErrorKind{
	{Name: stepfn.TypeRequestError, Is: stepfn.IsA[*RequestError]},
	{Name: stepfn.TypeRefusedError, Is: stepfn.IsA[*RefusedError]},
	{Name: stepfn.TypeDestinationExistsError, Is: stepfn.IsA[*ExistsError]},
	{Name: stepfn.TypeChecksumMismatchError, Is: stepfn.IsA[*ChecksumError]},
	{Name: stepfn.TypeSourceChangedError, Is: stepfn.IsA[*SourceChangedError]},
	{Name: stepfn.TypeFormatError, Is: stepfn.IsA[*archive.FormatError]},
	{Name: stepfn.TypeIncompleteError, Is: stepfn.IsA[*IncompleteError]},
	{Name: stepfn.TypeTransientError, Is: func(err error) bool { return stepfn.IsA[*TransientError](err) || s3x.Transient(err) }},
}

// ErrorType is the error type the extract Lambdas report for err, so the
// state machine's Retry and Catch can tell conditions apart: the first of
// errorKinds in the chain (TransientError for an S3 failure a retry can
// help), else Error.
func ErrorType(err error) string { return stepfn.NameOf(err, errorKinds) }

// Retryable reports whether running the step again may succeed.
func Retryable(err error) bool { return ErrorType(err) == stepfn.TypeTransientError }

func requestError(format string, a ...any) *RequestError {
	return &RequestError{[]string{fmt.Sprintf(format, a...)}}
}
