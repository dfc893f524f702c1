// Package s3rate keeps a process's S3 requests within the rate S3 serves
// and its connections from hanging.
//
// S3 serves each partitioned prefix about 5,500 GET/HEAD and 3,500
// PUT/COPY/POST/DELETE requests a second and answers 503 SlowDown past
// that while it scales, which takes minutes to hours. A fan-out of many
// requests in flight asks for far more; retrying each refusal on its own
// only adds requests. So every request a process makes to a bucket passes
// one limiter per bucket and class (reads: GET, HEAD, lists; writes: the
// rest), which learns the rate S3 allows from its answers: it lets requests
// through unthrottled until the first SlowDown, then holds them to a rate
// cut by half of what was being sent (multiplicative decrease) and raised a
// little each time a stretch of requests succeeds (additive increase), so
// the run settles just under the rate S3 serves and keeps finding the rate
// as S3 scales the prefix up.
//
// Options installs it on an S3 client with a retryer that has no retry
// quota (the standard retryer's 500-token quota answers "retry quota
// exceeded" under sustained throttling, aws/aws-sdk-go-v2#3413) and that
// retries throttling far longer than other errors, with full-jitter
// backoff; and an HTTP client with connect, response-header and idle-body
// timeouts (stall.go).
package s3rate

import (
	"context"
	"math"
	"sync"
	"time"
)

// Class is the kind of request S3 counts apart.
type Class int

const (
	// Read is GET and HEAD (objects, lists, parts).
	Read Class = iota
	// Write is PUT, POST and DELETE (uploads, copies, completions, deletes).
	Write
)

func (c Class) String() string {
	if c == Read {
		return "GET/HEAD"
	}
	return "PUT/COPY/POST/DELETE"
}

// Limiter holds one bucket's requests of one class to the rate S3 allows.
// The zero rate means no limit is known: requests go through unheld.
type Limiter struct {
	mu   sync.Mutex
	now  func() time.Time
	rate float64 // requests a second allowed; 0: unlimited
	// tokens and at: the token bucket, as of at.
	tokens float64
	at     time.Time
	// sent counts the requests let through in the current window of one
	// second (and the window before it), to know the rate being sent when
	// S3 first says slow down.
	window       time.Time
	sent, before int
	lastCut      time.Time
	started      time.Time // when it was made
	lastRaise    time.Time
	// lastSuccess is when a request last succeeded; throttled counts
	// SlowDown answers.
	lastSuccess time.Time
	throttled   int64
	succeeded   int64
}

// minRate is the lowest rate a limiter cuts to: S3 serves a new prefix at
// least this much, and the limiter must keep probing.
const minRate = 1.0

// cutEvery is how often at most a limiter halves its rate: the SlowDowns
// of requests already in flight answer one excess, not many.
const cutEvery = 500 * time.Millisecond

// raiseEvery is how often a limiter raises its rate while requests succeed.
const raiseEvery = 250 * time.Millisecond

func newLimiter(now func() time.Time) *Limiter {
	t := now()
	return &Limiter{now: now, at: t, window: t, lastSuccess: t, started: t}
}

// Wait returns when a request may be sent, or ctx's error.
func (l *Limiter) Wait(ctx context.Context) error {
	for {
		d := l.reserve()
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// reserve takes a token and returns 0, or returns how long to wait for one.
func (l *Limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.count(now)
	if l.rate == 0 {
		l.sent++
		return 0
	}
	// A burst of at most a tenth of a second's requests (and one).
	burst := math.Max(1, l.rate/10)
	l.tokens = math.Min(burst, l.tokens+now.Sub(l.at).Seconds()*l.rate)
	l.at = now
	if l.tokens >= 1 {
		l.tokens--
		l.sent++
		return 0
	}
	return time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
}

// count moves the one-second windows of requests sent along to now.
func (l *Limiter) count(now time.Time) {
	for now.Sub(l.window) >= time.Second {
		l.before, l.sent = l.sent, 0
		l.window = l.window.Add(time.Second)
		if now.Sub(l.window) >= time.Second {
			l.before, l.window = 0, now
		}
	}
}

// sending is the rate requests were let through over the last second or
// so (over the time since the first, when that is shorter).
func (l *Limiter) sending(now time.Time) float64 {
	frac := now.Sub(l.window).Seconds()
	n := float64(l.sent) + float64(l.before)*math.Max(0, 1-frac)
	over := math.Min(1, now.Sub(l.started).Seconds())
	if over < 0.05 {
		over = 0.05
	}
	return n / over
}

// Throttled tells the limiter S3 answered SlowDown, at most once in
// cutEvery: the first time, the rate is set to half of what was being
// sent; after that it is cut by a quarter (of the rate, or of what was
// being sent if less).
func (l *Limiter) Throttled() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.count(now)
	l.throttled++
	if now.Sub(l.lastCut) < cutEvery {
		return
	}
	l.lastCut = now
	r := l.sending(now)
	if l.rate == 0 {
		l.rate = math.Max(minRate, r/2)
	} else {
		l.rate = math.Max(minRate, math.Min(l.rate, r)*0.75)
	}
	l.tokens = 0
	l.at = now
}

// Succeeded tells the limiter a request was served: the rate rises by a
// twentieth of itself (at least one request a second) every raiseEvery
// while requests succeed and the rate is in use, so it climbs back to what
// S3 serves within seconds and on as S3 scales.
func (l *Limiter) Succeeded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.succeeded++
	l.lastSuccess = now
	if l.rate == 0 || now.Sub(l.lastRaise) < raiseEvery || now.Sub(l.lastCut) < cutEvery {
		return
	}
	l.lastRaise = now
	l.rate += math.Max(1, l.rate/20)
}

// Stats are what a limiter saw.
type Stats struct {
	Rate      float64 // requests a second it allows now (0: unlimited)
	Throttled int64   // SlowDown answers
	Succeeded int64
	// SinceSuccess is how long ago a request last succeeded.
	SinceSuccess time.Duration
}

// Stats says what the limiter saw so far.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Rate: l.rate, Throttled: l.throttled, Succeeded: l.succeeded, SinceSuccess: l.now().Sub(l.lastSuccess)}
}

// Limits are a process's limiters, one per bucket and class. The zero
// value is ready; Default is the process's.
type Limits struct {
	mu  sync.Mutex
	by  map[limitKey]*Limiter
	now func() time.Time // nil: time.Now
}

type limitKey struct {
	bucket string
	class  Class
}

// Default is the limits every client Options configures shares, unless
// given its own: every request a process makes to a bucket counts against
// one rate, whichever client makes it.
var Default = &Limits{}

// For is the limiter of the bucket's requests of class c.
func (ls *Limits) For(bucket string, c Class) *Limiter {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.by == nil {
		ls.by = map[limitKey]*Limiter{}
	}
	k := limitKey{bucket, c}
	l := ls.by[k]
	if l == nil {
		now := ls.now
		if now == nil {
			now = time.Now
		}
		l = newLimiter(now)
		ls.by[k] = l
	}
	return l
}

// Throttled is how many SlowDown answers every limiter saw.
func (ls *Limits) Throttled() int64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var n int64
	for _, l := range ls.by {
		n += l.Stats().Throttled
	}
	return n
}
