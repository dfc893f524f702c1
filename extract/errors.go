package extract

import (
	"errors"
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/archive"
	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/workflow"
)

// RequestError says the extract request is wrong; it says what to fix.
type RequestError struct{ Problems []string }

func (e *RequestError) Error() string {
	return "bad extract request: " + strings.Join(e.Problems, "; ")
}

// TransientError is an S3 failure that may heal (5xx, throttling, a lost
// connection) that the SDK's own retries did not overcome; the state
// machine retries the step.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() + " (transient; retrying may help)" }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient says so to s3x.Transient, so retry loops ask once.
func (e *TransientError) Transient() bool { return true }

// IncompleteError says the workers' results do not account for every
// planned object (a batch lost, an object missing): nothing is reported
// as extracted.
type IncompleteError struct{ Msg string }

func (e *IncompleteError) Error() string { return e.Msg }

// ErrorType is the error type the extract Lambdas report for err, so the
// state machine's Retry and Catch can tell conditions apart: the first of
// extract's error types in the chain, named by workflow/errors.go's constants
// (the create workflow's name for the same condition: an ExistsError is a
// DestinationExistsError, a ChecksumError a ChecksumMismatchError),
// TransientError for an S3 failure a retry can help, else Error.
func ErrorType(err error) string {
	var (
		re  *RequestError
		rfe *RefusedError
		ee  *ExistsError
		ce  *ChecksumError
		sce *SourceChangedError
		fe  *archive.FormatError
		ie  *IncompleteError
	)
	switch {
	case errors.As(err, &re):
		return workflow.TypeRequestError
	case errors.As(err, &rfe):
		return workflow.TypeRefusedError
	case errors.As(err, &ee):
		return workflow.TypeDestinationExistsError
	case errors.As(err, &ce):
		return workflow.TypeChecksumMismatchError
	case errors.As(err, &sce):
		return workflow.TypeSourceChangedError
	case errors.As(err, &fe):
		return workflow.TypeFormatError
	case errors.As(err, &ie):
		return workflow.TypeIncompleteError
	case s3x.Transient(err): // extract's TransientError and workflow's say so themselves
		return workflow.TypeTransientError
	}
	return workflow.TypeUntyped
}

// Retryable reports whether running the step again may succeed.
func Retryable(err error) bool { return ErrorType(err) == workflow.TypeTransientError }

func requestError(format string, a ...any) *RequestError {
	return &RequestError{[]string{fmt.Sprintf(format, a...)}}
}
