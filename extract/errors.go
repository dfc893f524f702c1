package extract

import (
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/zipread"
)

// IncompleteError says the workers' results do not account for every
// planned object, because a batch was lost or an object is missing.
// Nothing is reported as extracted.
type IncompleteError struct{ Msg string }

func (e *IncompleteError) Error() string { return e.Msg }

// errorKinds are extract's conditions in the order ErrorType looks for them.
// internal/failure holds those the create workflow meets too.
var errorKinds = []stepfn.ErrorKind{
	{Name: stepfn.TypeRequestError, Is: stepfn.IsA[*failure.RequestError]},
	{Name: stepfn.TypeRefusedError, Is: stepfn.IsA[*EntriesRefusedError]},
	{Name: stepfn.TypeDestinationExistsError, Is: stepfn.IsA[*failure.DestinationExistsError]},
	{Name: stepfn.TypeChecksumMismatchError, Is: stepfn.IsA[*failure.ChecksumMismatchError]},
	{Name: stepfn.TypeSourceChangedError, Is: stepfn.IsA[*failure.SourceChangedError]},
	{Name: stepfn.TypeFormatError, Is: stepfn.IsA[*zipread.FormatError]},
	{Name: stepfn.TypeIncompleteError, Is: stepfn.IsA[*IncompleteError]},
	{Name: stepfn.TypeTransientError, Is: func(err error) bool { return stepfn.IsA[*stepfn.TransientError](err) || s3err.Transient(err) }},
}

// ErrorType returns the error type the extract Lambdas report for err, so
// that the state machine's Retry and Catch can tell conditions apart. It is
// the first of errorKinds in the chain, such as stepfn.TransientError for an
// S3 failure a retry can help, else Error.
func ErrorType(err error) string { return stepfn.NameOf(err, errorKinds) }

// Retryable reports whether running the step again may succeed.
func Retryable(err error) bool { return ErrorType(err) == stepfn.TypeTransientError }

func requestError(format string, a ...any) *failure.RequestError {
	return failure.Request("extract", format, a...)
}

func sourceChanged(err error, a *zipread.Archive) error {
	if s3err.IsCode(err, "PreconditionFailed", "NoSuchKey", "NotFound") {
		return &failure.SourceChangedError{What: "archive", Bucket: a.Bucket, Key: a.Key, ETag: a.ETag, When: "during the extraction", Fix: "run again", Err: err}
	}
	return err
}

// writeRefused names a write S3 refused by what it means for the
// extraction. A key taken since planning is a failure.DestinationExistsError,
// Appeared when the run overwrites; bytes without the listed CRC-32 are a
// failure.ChecksumMismatchError.
func writeRefused(err error, bucket, key string, overwrite bool) error {
	switch {
	case s3err.IsCode(err, "PreconditionFailed"):
		return &failure.DestinationExistsError{Bucket: bucket, Keys: []string{key}, Appeared: overwrite}
	case s3err.IsCode(err, "BadDigest", "InvalidPart"):
		return failure.Checksum("S3 refused s3://%s/%s: its bytes do not have the central directory's CRC-32 (%v)", bucket, key, err)
	}
	return err
}
