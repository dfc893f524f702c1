package s3err

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// answered is an S3 answer as the SDK returns it: status and code.
func answered(status int, code string) error {
	re := &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}}
	if code != "" {
		re.Err = &smithy.GenericAPIError{Code: code, Message: code + " (test)"}
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: re}
}

// unanswered is a request that got no answer, as the SDK returns it.
func unanswered(cause error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: cause}
}

type sayTransient bool

func (s sayTransient) Error() string { return "typed" }

func (s sayTransient) Transient() bool { return bool(s) }

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"5xx", answered(503, "SlowDown"), true},
		{"500-no-code", answered(500, ""), true},
		{"429", answered(429, ""), true},
		{"409-conditional-conflict", answered(409, "ConditionalRequestConflict"), true},
		{"400-request-timeout", answered(400, "RequestTimeout"), true},
		{"501-not-implemented", answered(501, "NotImplemented"), false},
		{"507-out-of-space-bare", answered(507, ""), false},
		{"insufficient-storage-code", answered(500, "InsufficientStorage"), false},
		{"403-denied", answered(403, "AccessDenied"), false},
		{"404-bare", answered(404, ""), false},
		{"412-precondition", answered(412, "PreconditionFailed"), false},
		{"connection-reset", unanswered(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}), true},
		// A copy's 200 whose body a reset cut, as the SDK returns it.
		{"200-body-cut", &smithy.OperationError{ServiceID: "S3", OperationName: "UploadPartCopy", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 200}},
			Err:      &smithy.DeserializationError{Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}}}, true},
		{"deadline", unanswered(context.DeadlineExceeded), true},
		{"sdk-gave-up-sending", unanswered(errors.New("failed to send the request")), true},
		{"cancelled", unanswered(context.Canceled), false},
		{"cancelled-wrapping-5xx", fmt.Errorf("%w: %w", context.Canceled, answered(503, "")), false},
		// Where the two classifiers this replaces disagreed:
		// workflow's called any unanswered error transient, extract's only
		// an SDK or deadline one.
		{"plain-error-not-s3", errors.New("part 3 has no source"), false},
		{"body-cut-off", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), true},
		{"body-read-net-error", fmt.Errorf("reading body: %w", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("reset")}), true},
		{"invalid-params", unanswered(smithy.InvalidParamsError{Context: "PutObjectInput"}), false},
		{"serialization", unanswered(&smithy.SerializationError{Err: errors.New("bad header")}), false},
		// Typed errors decide for themselves, however wrapped.
		{"typed-transient", fmt.Errorf("batch 2: %w", sayTransient(true)), true},
		{"typed-not-transient", fmt.Errorf("batch 2: %w", sayTransient(false)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Transient(c.err); got != c.want {
				t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"head-bare-404", answered(404, ""), true},
		{"no-such-key", answered(404, "NoSuchKey"), true},
		{"no-such-upload", answered(404, "NoSuchUpload"), true},
		{"code-without-status", &smithy.GenericAPIError{Code: "NoSuchUpload"}, true},
		{"403", answered(403, "AccessDenied"), false},
		{"unanswered", unanswered(errors.New("reset")), false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := NotFound(c.err); got != c.want {
				t.Errorf("NotFound(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	slow, denied := answered(503, "SlowDown"), answered(403, "AccessDenied")
	for _, c := range []struct {
		name      string
		errs      []error // fn's answers, attempt by attempt; past the end nil
		attempts  int
		wantCalls int
		wantErr   error
		wantWaits []time.Duration
	}{
		{"first-try", nil, 5, 1, nil, nil},
		{"heals-on-third", []error{slow, slow}, 5, 3, nil, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"gives-up-after-attempts", []error{slow, slow, slow, slow}, 3, 3, slow, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"permanent-not-retried", []error{denied}, 5, 1, denied, nil},
		{"zero-attempts-tries-once", []error{slow}, 0, 1, slow, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var waits []time.Duration
			r := Retry{Attempts: c.attempts, Backoff: Linear(100 * time.Millisecond),
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			calls := 0
			err := r.Do(t.Context(), func(attempt int) error {
				calls++
				if attempt != calls {
					t.Errorf("attempt %d told %d", calls, attempt)
				}
				if attempt <= len(c.errs) {
					return c.errs[attempt-1]
				}
				return nil
			})
			if err != c.wantErr || calls != c.wantCalls || fmt.Sprint(waits) != fmt.Sprint(c.wantWaits) {
				t.Errorf("Do = %v after %d calls waiting %v, want %v after %d waiting %v", err, calls, waits, c.wantErr, c.wantCalls, c.wantWaits)
			}
		})
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := Retry{Attempts: 5, Backoff: Linear(time.Hour)}.Do(ctx, func(int) error {
		calls++
		cancel() // the caller stops during the wait, which must not last an hour
		return answered(503, "")
	})
	if calls != 1 || err == nil {
		t.Errorf("Do after cancel = %v with %d calls, want the error of the one call", err, calls)
	}
	ctx, cancel = context.WithCancel(t.Context())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	start := time.Now()
	err = Retry{Attempts: 5, Backoff: Linear(time.Hour)}.Do(ctx, func(int) error { return answered(503, "") })
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Minute {
		t.Errorf("Do cancelled during a wait = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
}

func TestBackoff(t *testing.T) {
	if got := Squared(100 * time.Millisecond)(3); got != 900*time.Millisecond {
		t.Errorf("Squared(100ms)(3) = %v, want 900ms", got)
	}
	if got := Linear(time.Second)(5); got != 5*time.Second {
		t.Errorf("Linear(1s)(5) = %v, want 5s", got)
	}
}
