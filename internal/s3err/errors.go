package s3err

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/aws/smithy-go"
)

// Transient reports whether err is a failure that a retry of the same
// request can help, and nothing else:
//   - an error that says so itself (a Transient() bool method anywhere in
//     its chain: the handlers' TransientError types);
//   - S3 answered 5xx (but 501 Not Implemented and 507 Insufficient
//     Storage, which stay until someone acts) or 429, or with a code that names a passing condition
//     (MayHeal: throttling, a timeout, a conflicting conditional write);
//   - S3 did not answer: the connection failed or was cut (a net.Error, a
//     body that ended early, a 200's body among them), or the request timed out (DeadlineExceeded,
//     which an HTTP client's response timeout also matches), or the SDK
//     gave up sending it for a reason other than its own parameters.
//
// A cancelled context is never transient: the caller stopped, S3 did not
// fail. Nor is an error that is not an S3 or network failure at all: no
// retry changes it.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var t interface{ Transient() bool }
	if errors.As(err, &t) {
		return t.Transient()
	}
	status, code := Status(err)
	switch {
	case status == http.StatusNotImplemented, status == http.StatusInsufficientStorage,
		code == "NotImplemented", code == "InsufficientStorage":
		return false // a 5xx that stays: the server lacks the feature or the space
	case status >= 500, status == http.StatusTooManyRequests, MayHeal(code):
		return true
	case status/100 != 2 && status != 0 || code != "":
		return false // S3 answered, and not with a passing condition
	}
	// A 2xx whose body was cut is an answer that did not arrive: below.
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var (
		oe *smithy.OperationError
		pe smithy.InvalidParamsError
		se *smithy.SerializationError
	)
	return errors.As(err, &oe) && !errors.As(err, &pe) && !errors.As(err, &se)
}

// NotFound reports whether err says the object or the upload does not
// exist (HEAD answers a bare 404, without a code).
func NotFound(err error) bool {
	if status, _ := Status(err); status == http.StatusNotFound {
		return true
	}
	return IsCode(err, "NoSuchKey", "NotFound", "NoSuchUpload")
}
