package create

import (
	"fmt"
	"net/http"
)

// RefusedError is an S3 answer that no retry can change, because the server
// is out of space, does not implement the operation, or will not let these
// credentials do it. The state machine does not retry it, and Fix says what
// the user must do before running again.
type RefusedError struct {
	Op   string // operation and object, "UploadPartCopy s3://work/…"
	Code string // S3's error code, or the HTTP status when it gave none
	Fix  string
	Err  error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: %v (not transient: %s)", e.Op, e.Err, e.Fix)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refusals are the permanent answers s3Error recognises, by S3 error code,
// with what to do about each. A 5xx among them is not a passing fault, so a
// retry by the SDK or the state machine would only take longer to fail.
var refusals = map[string]string{
	"InsufficientStorage": "the S3 server is out of space; free space on it, or give the run a work bucket on a server with room " +
		"(a chain holds a few round objects of 5-10 MiB per part being built, the archive needs its own size)",
	"NotImplemented":        "the S3 server does not implement this request; use another strategy, or a server that does",
	"AccessDenied":          "the credentials may not do this on that bucket; grant the permission, or use credentials that have it",
	"AllAccessDisabled":     "all access to this object has been disabled on the server",
	"AccountProblem":        "the account behind these credentials has a problem that blocks this request; see the provider's console",
	"InvalidAccessKeyId":    "the access key is not known to this server; check the credentials and the endpoint",
	"SignatureDoesNotMatch": "the secret key does not match the access key; check the credentials",
	"NoSuchBucket":          "the bucket does not exist on this server; create it, or check its name and the endpoint",
	"QuotaExceeded":         "the bucket's or account's storage quota is reached; free space or raise the quota",
}

// statusRefusals are the permanent HTTP statuses a server may send without
// an error code, as in a HEAD answer, which has no body.
var statusRefusals = map[int]string{
	http.StatusInsufficientStorage: "InsufficientStorage",
	http.StatusNotImplemented:      "NotImplemented",
}

// refused returns the RefusedError for a permanent answer to op, the
// operation and the object it was on, or nil.
func refused(op string, status int, code string, err error) error {
	if code == "" {
		code = statusRefusals[status]
	}
	fix, ok := refusals[code]
	if !ok {
		return nil
	}
	return &RefusedError{Op: op, Code: code, Fix: fix, Err: err}
}
