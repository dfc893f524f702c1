package extract

import (
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/archive"
	"github.com/s3zip/s3zip/internal/s3ref"
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

// ExistsError lists objects an extraction would replace.
type ExistsError struct {
	Bucket string
	Keys   []string
	// Appeared: an --overwrite run met them after planning, when they were
	// free; it replaces only what was there when it planned.
	Appeared bool
}

func (e *ExistsError) Error() string {
	shown := e.Keys[:min(len(e.Keys), 20)]
	more := ""
	if len(e.Keys) > len(shown) {
		more = fmt.Sprintf(" … and %d more", len(e.Keys)-len(shown))
	}
	if e.Appeared {
		return fmt.Sprintf("%d objects appeared in s3://%s where the archive's entries would go after the extraction was planned: %s%s (another writer is using the prefix; --overwrite replaces only what was there when the run planned: run again)",
			len(e.Keys), e.Bucket, strings.Join(shown, ", "), more)
	}
	return fmt.Sprintf("%d objects already exist in s3://%s where the archive's entries would go: %s%s (use --overwrite to replace them)",
		len(e.Keys), e.Bucket, strings.Join(shown, ", "), more)
}

// ChecksumError says extracted bytes do not have the CRC-32 the central
// directory gives: the archive is corrupt (or changed).
type ChecksumError struct{ Msg string }

func (e *ChecksumError) Error() string { return e.Msg }

// SourceChangedError says the archive changed while it was being extracted.
type SourceChangedError struct {
	Archive, ETag string
	Err           error
}

func (e *SourceChangedError) Error() string {
	return fmt.Sprintf("%s changed during the extraction (it was ETag %s): %v; run again", e.Archive, e.ETag, e.Err)
}
func (e *SourceChangedError) Unwrap() error { return e.Err }

func sourceChanged(err error, a *archive.Archive) error {
	if s3ref.IsCode(err, "PreconditionFailed", "NoSuchKey", "NotFound") {
		return &SourceChangedError{Archive: a.String(), ETag: a.ETag, Err: err}
	}
	return err
}

// writeRefused names a write S3 refused by what it means for the
// extraction: a key taken since planning (an ExistsError; Appeared when the
// run overwrites), or bytes without the listed CRC-32 (a ChecksumError).
func writeRefused(err error, bucket, key string, overwrite bool) error {
	switch {
	case s3ref.IsCode(err, "PreconditionFailed"):
		return &ExistsError{Bucket: bucket, Keys: []string{key}, Appeared: overwrite}
	case s3ref.IsCode(err, "BadDigest", "InvalidPart"):
		return &ChecksumError{fmt.Sprintf("S3 refused s3://%s/%s: its bytes do not have the central directory's CRC-32 (%v)", bucket, key, err)}
	}
	return err
}
