package s3rate

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// outage is a client's retry budget: the run of failed attempts it is in,
// across all its requests, with no answer between. Retries go on while it
// is shorter than its limit; past it a failing request is not tried again,
// so an endpoint that answers nothing fails the run in bounded time. A
// budget counted per run instead would grow with a run of millions of
// requests (or, fixed, be spent by a healthy run's rare 500s); this one
// is spent only by an outage, whatever came before it.
type outage struct {
	limit time.Duration
	now   func() time.Time

	mu          sync.Mutex
	since, last time.Time // the run's first and last failed attempt; since zero: none
	failed      int       // failed attempts in the run
}

func newOutage(limit time.Duration) *outage {
	return &outage{limit: limit, now: time.Now}
}

// fail records a failed attempt. Failures further apart than the limit
// are not one outage: a client idle since its last failure starts anew.
func (o *outage) fail() {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if o.since.IsZero() || now.Sub(o.last) > o.limit {
		o.since, o.failed = now, 0
	}
	o.last = now
	o.failed++
}

// answer records an attempt S3 answered: the outage, if any, is over.
func (o *outage) answer() {
	o.mu.Lock()
	o.since, o.failed = time.Time{}, 0
	o.mu.Unlock()
}

// spent is the error that stops a retry, nil while the budget lasts.
func (o *outage) spent(cause error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return nil
	}
	if d := o.now().Sub(o.since); d > o.limit {
		return &OutageError{Failed: o.failed, Over: d, Limit: o.limit, Err: cause}
	}
	return nil
}

// OutageError is a request that was not tried again because every attempt
// its client made, Failed of them, failed over Over, longer than the
// client's Config.GiveUpAfter (Limit).
type OutageError struct {
	Failed      int
	Over, Limit time.Duration
	Err         error
}

func (e *OutageError) Error() string {
	return fmt.Sprintf("not retried: every attempt of this client failed for %s (%d in a row, limit %s), %v",
		e.Over.Round(time.Second), e.Failed, e.Limit, e.Err)
}

func (e *OutageError) Unwrap() error { return e.Err }

// GaveUpError is a request the client stopped trying, because it failed
// Config.Attempts times (the SDK's *retry.MaxAttemptsError) or during an
// outage (*OutageError): it says how often it was tried and for how long.
type GaveUpError struct {
	Attempts int
	Elapsed  time.Duration
	Err      error // *retry.MaxAttemptsError or *OutageError
}

func (e *GaveUpError) Error() string {
	cause := e.Err
	var m *retry.MaxAttemptsError
	if errors.As(cause, &m) {
		cause = m.Err // its own text repeats the count
	}
	attempts := "attempts"
	if e.Attempts == 1 {
		attempts = "attempt"
	}
	return fmt.Sprintf("gave up after %d %s over %s: %v", e.Attempts, attempts, e.Elapsed.Round(time.Millisecond), cause)
}

func (e *GaveUpError) Unwrap() error { return e.Err }
