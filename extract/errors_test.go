package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// ErrorType calls a failure transient only when a retry can help, as
// create's classifier does, and the typed errors are recognised by
// s3err.Transient.
func TestErrorTypeTransientOnlyWhenRetryCanHelp(t *testing.T) {
	sdk := func(cause error) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: cause}
	}
	answered := func(status int, code string) error {
		re := &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}}
		if code != "" {
			re.Err = &smithy.GenericAPIError{Code: code}
		}
		return sdk(re)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"connection-reset", sdk(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}), stepfn.TypeTransientError},
		{"response-timeout", sdk(context.DeadlineExceeded), stepfn.TypeTransientError},
		{"cancelled", sdk(context.Canceled), stepfn.TypeUntyped},
		{"not-an-s3-failure", errors.New("entry 3 has no data"), stepfn.TypeUntyped},
		// A body read that fails is no SDK error, yet a retry helps.
		{"body-cut-off", fmt.Errorf("read archive bytes: %w", io.ErrUnexpectedEOF), stepfn.TypeTransientError},
		{"body-read-reset", fmt.Errorf("read archive bytes: %w", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("reset")}), stepfn.TypeTransientError},
		// A server out of space or without the feature stays so (create
		// calls these RefusedError).
		{"out-of-space", answered(507, "InsufficientStorage"), stepfn.TypeUntyped},
		{"not-implemented", answered(501, ""), stepfn.TypeUntyped},
		// The SDK refusing its own parameters never heals.
		{"invalid-params", sdk(smithy.InvalidParamsError{Context: "GetObjectInput"}), stepfn.TypeUntyped},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorType(c.err); got != c.want {
				t.Errorf("ErrorType(%v) = %s, want %s", c.err, got, c.want)
			}
		})
	}
	if te := fmt.Errorf("job 2: %w", &stepfn.TransientError{Err: errors.New("x")}); !s3err.Transient(te) {
		t.Errorf("s3err.Transient(%v) = false: a stepfn.TransientError must say it is one", te)
	}
}
