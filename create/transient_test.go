package create

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// s3Error calls a failure transient (so the state machine retries it)
// only when a retry can help: the cases where workflow's and extract's
// classifiers used to disagree, and the typed error recognised by
// s3err.Transient (so a retry loop does not have to ask twice).
func TestS3ErrorTransientOnlyWhenRetryCanHelp(t *testing.T) {
	sdk := func(cause error) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: cause}
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"connection-reset", sdk(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}), stepfn.TypeTransientError},
		{"body-cut-off", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), stepfn.TypeTransientError},
		{"response-timeout", sdk(context.DeadlineExceeded), stepfn.TypeTransientError},
		{"cancelled", sdk(context.Canceled), stepfn.TypeUntyped},
		// Used to be stepfn.TransientError: no status and no code was taken for a lost connection.
		{"not-an-s3-failure", errors.New("part 3 has no source"), stepfn.TypeUntyped},
		{"invalid-params", sdk(smithy.InvalidParamsError{Context: "GetObjectInput"}), stepfn.TypeUntyped},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorType(s3Error("GetObject", "b", "k", false, c.err)); got != c.want {
				t.Errorf("ErrorType(s3Error(%v)) = %s, want %s", c.err, got, c.want)
			}
		})
	}
	if te := fmt.Errorf("batch 2: %w", &stepfn.TransientError{Op: "op", Err: errors.New("x")}); !s3err.Transient(te) {
		t.Errorf("s3err.Transient(%v) = false: a stepfn.TransientError must say it is one", te)
	}
}
