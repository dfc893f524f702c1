package s3err

import (
	"context"
	"time"
)

// Retry is how often and how patiently an operation is tried. The zero
// value tries once.
type Retry struct {
	Attempts int                             // tries in all; below 1 means 1
	Backoff  func(attempt int) time.Duration // the wait after the attempt-th failure
	// Retryable says which errors are tried again; nil means Transient.
	Retryable func(error) bool
	// Sleep waits between attempts, returning early with ctx's error when
	// ctx ends; nil means Wait. Tests shorten it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do runs fn until it succeeds, fails with an error that is not
// retryable, has run Attempts times, or ctx ends; it returns fn's last
// error, or ctx's when ctx ended during a wait. fn is told which attempt
// it is (from 1); work that must happen between attempts belongs in fn.
func (r Retry) Do(ctx context.Context, fn func(attempt int) error) error {
	retryable, sleep := r.Retryable, r.Sleep
	if retryable == nil {
		retryable = Transient
	}
	if sleep == nil {
		sleep = Wait
	}
	for attempt := 1; ; attempt++ {
		err := fn(attempt)
		if err == nil || attempt >= r.Attempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		var d time.Duration
		if r.Backoff != nil {
			d = r.Backoff(attempt)
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// Linear waits attempt × step after the attempt-th failure.
func Linear(step time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration { return time.Duration(attempt) * step }
}

// Squared waits attempt² × step after the attempt-th failure.
func Squared(step time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration { return time.Duration(attempt*attempt) * step }
}

// Wait sleeps d, or less when ctx ends first; then it returns ctx's error.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
