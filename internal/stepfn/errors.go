package stepfn

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Each condition a state machine tells apart (retry, or fail with a reason
// the user can act on) has a Go type of its own, and the name the handler
// reports for it is what the ASL's Retry and Catch match (ErrorEquals).
//
// aws-lambda-go alone would report the returned error's own type name
// (pointer stripped, no unwrapping): a RequestError wrapped with fmt.Errorf
// would arrive as "wrapError". So every way a handler runs reports the
// workflow's ErrorType (NameOf over its kinds) instead, and errors keep
// their name however much context is wrapped around them.
// create/errors_test.go and extract's tests hold statemachine/*.asl.json
// to these names.

// The error names, as ErrorEquals spells them.
const (
	TypeRequestError           = "RequestError"
	TypeSourceChangedError     = "SourceChangedError"
	TypeChecksumMismatchError  = "ChecksumMismatchError"
	TypeDestinationExistsError = "DestinationExistsError"
	TypeLimitError             = "LimitError"
	TypeRefusedError           = "RefusedError"
	TypeDeadlineError          = "DeadlineError"
	TypeTransientError         = "TransientError"
	// TypeUntyped is reported for an error of no kind above; the state
	// machines do not retry it.
	TypeUntyped = "Error"

	// Reported by the extract workflow only, which otherwise reports the
	// names above for the same conditions.
	TypeFormatError     = "FormatError"     // the archive is not a readable ZIP
	TypeIncompleteError = "IncompleteError" // the workers' results do not account for every job

	// TypeUploadRestartError is reported by the create workflow's
	// finalizer when S3 answers the archive's conditional completion 409
	// ConditionalRequestConflict: the upload is over, and S3's word is to
	// start it again and upload every part anew.
	TypeUploadRestartError = "UploadRestartError"
)

// Types are every name above but TypeUntyped: the names a handler of
// either workflow may report, which the state machines' Retry and Catch
// may match.
var Types = []string{
	TypeRequestError, TypeSourceChangedError, TypeChecksumMismatchError, TypeDestinationExistsError,
	TypeLimitError, TypeRefusedError, TypeDeadlineError, TypeTransientError, TypeFormatError, TypeIncompleteError,
	TypeUploadRestartError,
}

// RetryableTypes are the names that may heal on retry: every worker Task of
// the state machines retries them, and nothing else of ours.
var RetryableTypes = []string{TypeTransientError, TypeDeadlineError}

// ErrorKind is one condition a workflow names: Is finds it in an error's chain.
type ErrorKind struct {
	Name string
	Is   func(error) bool
}

// NameOf is the name of the first of kinds (in order) found in err's chain,
// or TypeUntyped; a RefusedBatchError in the chain names itself.
func NameOf(err error, kinds []ErrorKind) string {
	if r, ok := errors.AsType[*RefusedBatchError](err); ok {
		return r.Name
	}
	for _, k := range kinds {
		if k.Is(err) {
			return k.Name
		}
	}
	return TypeUntyped
}

// IsA reports whether err's chain holds an error of type T; it is the Is of
// most kinds.
func IsA[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// TransientError is an S3 failure that may heal (5xx, throttling, network)
// that the SDK's own retries did not overcome; the state machines retry it.
// Both workflows report it, and the results reader returns it from their
// getters, so it is one type.
type TransientError struct {
	Op  string // what failed on what: "GetObject s3://b/k"; may be empty
	Err error
}

func (e *TransientError) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("%v (transient; retrying may help)", e.Err)
	}
	return fmt.Sprintf("%s: %v (transient; retrying may help)", e.Op, e.Err)
}

func (e *TransientError) Unwrap() error { return e.Err }

// Transient says so to s3err.Transient, so a retry loop asks once.
func (e *TransientError) Transient() bool { return true }

// RefusedBatchError is a Map child's batch that failed for a cause no retry
// mends. Inside the ItemProcessor, the state machines catch such an error
// (every name but the retryable ones) and end the child with the output
// {"refused": {"Error", "Cause"}}, so that the Map Run fails only for
// causes a redrive may mend; the finalizer then fails the run with the
// batch's own error (its Name), and its Catch aborts it.
type RefusedBatchError struct {
	Name  string `json:"Error"`
	Cause string `json:"Cause"`
}

// Error is the batch's own message: the Cause Step Functions recorded is
// the function's error document, {"errorMessage", "errorType"}.
func (e *RefusedBatchError) Error() string {
	var doc struct {
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(e.Cause), &doc) == nil && doc.Message != "" {
		return doc.Message
	}
	return e.Cause
}

// AbortInput is the payload of both state machines' Abort state, as their
// Catch builds it: the state input at the failure (the job, or the request
// when planning failed), the error caught ({"Error":…,"Cause":…}) and the
// execution.
type AbortInput struct {
	State     json.RawMessage `json:"state"`
	Error     json.RawMessage `json:"error"`
	Execution string          `json:"execution"`
}
