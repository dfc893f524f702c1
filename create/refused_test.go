package create

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// s3Answer is an error as the SDK returns it for an HTTP answer: the
// status in a ResponseError around the API error (code "" for a bare status).
func s3Answer(status int, code string) error {
	var api error = &smithy.GenericAPIError{Code: code, Message: code + " (test)"}
	if code == "" {
		api = errors.New("http " + http.StatusText(status))
	}
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: api}
}

func TestS3ErrorClassification(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		source bool
		want   string // ErrorType
		says   string // part of the message that tells the user what to do
	}{
		{"out-of-space", s3Answer(507, "InsufficientStorage"), false, "RefusedError", "out of space"},
		{"out-of-space-bare-507", s3Answer(507, ""), false, "RefusedError", "out of space"},
		{"not-implemented", s3Answer(501, "NotImplemented"), false, "RefusedError", "does not implement"},
		{"not-implemented-bare-501", s3Answer(501, ""), false, "RefusedError", "does not implement"},
		{"access-denied", s3Answer(403, "AccessDenied"), false, "RefusedError", "grant the permission"},
		{"access-denied-source", s3Answer(403, "AccessDenied"), true, "RefusedError", "grant the permission"},
		{"unknown-access-key", s3Answer(403, "InvalidAccessKeyId"), false, "RefusedError", "check the credentials"},
		{"wrong-secret", s3Answer(403, "SignatureDoesNotMatch"), false, "RefusedError", "check the credentials"},
		{"no-bucket", s3Answer(404, "NoSuchBucket"), false, "RefusedError", "create it"},
		{"quota", s3Answer(403, "QuotaExceeded"), false, "RefusedError", "quota"},
		{"internal-error", s3Answer(500, "InternalError"), false, "TransientError", "retrying may help"},
		{"service-unavailable", s3Answer(503, "ServiceUnavailable"), false, "TransientError", "retrying may help"},
		{"slow-down", s3Answer(503, "SlowDown"), false, "TransientError", "retrying may help"},
		{"too-many-requests", s3Answer(429, ""), false, "TransientError", "retrying may help"},
		{"request-timeout", s3Answer(400, "RequestTimeout"), false, "TransientError", "retrying may help"},
		// A lost connection as the SDK returns it (a bare error with no
		// status is no S3 failure: s3err.Transient does not call it transient).
		{"network", &smithy.OperationError{ServiceID: "S3", OperationName: "UploadPartCopy",
			Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}, false, "TransientError", "retrying may help"},
		{"source-changed", s3Answer(412, "PreconditionFailed"), true, "SourceChangedError", "run again"},
		{"source-deleted", s3Answer(404, "NoSuchKey"), true, "SourceChangedError", "run again"},
		{"bad-request", s3Answer(400, "InvalidArgument"), false, "Error", "InvalidArgument"},
		{"cancelled", context.Canceled, false, "Error", "context canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s3Error("UploadPartCopy", "work", "s3zip-work/x/chain/1", c.source, c.err)
			if got := ErrorType(err); got != c.want {
				t.Errorf("ErrorType = %s, want %s (%v)", got, c.want, err)
			}
			if Retryable(err) != (c.want == "TransientError") {
				t.Errorf("Retryable = %v for a %s", Retryable(err), c.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.says) || !strings.Contains(msg, "s3://work/s3zip-work/x/chain/1") {
				t.Errorf("message %q does not name the object and say %q", msg, c.says)
			}
			if c.want == "RefusedError" && strings.Contains(msg, "transient;") {
				t.Errorf("a permanent answer advises a retry: %q", msg)
			}
			if !errors.Is(err, c.err) {
				t.Errorf("the S3 error is not kept in the chain: %v", err)
			}
		})
	}
}
