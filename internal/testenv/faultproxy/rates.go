package faultproxy

import (
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Rates are the request rates the proxy serves, as S3 serves each
// partitioned prefix about 5,500 GET/HEAD and 3,500 PUT/COPY/POST/DELETE
// requests a second and answers 503 SlowDown past that.
//
// A test scales them to what one machine serves: a hundred workers on AWS
// ask one prefix for far more than it serves, and a run here, a few
// thousand requests a second at most, meets the same refusals when the
// rates are cut by the same factor (ScaledRates).
type Rates struct {
	Read  float64 // GET and HEAD requests a second per partition
	Write float64 // PUT, POST and DELETE requests a second per partition
	// PrefixDepth is how keys are partitioned: by the bucket and the key's
	// first PrefixDepth "/"-separated components; 0 makes the whole bucket
	// one partition, as S3 serves a new bucket until it splits it.
	PrefixDepth int
	// Burst is the requests above the rate a partition lets through at
	// once (default a tenth of a second's); BurstSeconds, when set, makes
	// it that many seconds' worth of each class's rate instead.
	Burst        float64
	BurstSeconds float64
}

// S3's per-prefix request rates.
const (
	S3ReadRate  = 5500
	S3WriteRate = 3500
)

// ScaledRates are S3's per-prefix rates divided by factor, in S3's
// proportion: ScaledRates(55) serves 100 GET/HEAD and about 64 other
// requests a second per partition.
func ScaledRates(factor float64) *Rates {
	return &Rates{Read: S3ReadRate / factor, Write: S3WriteRate / factor}
}

// rateBuckets are token buckets by partition and class.
type rateBuckets struct {
	r  Rates
	mu sync.Mutex
	by map[string]*tokenBucket
}

type tokenBucket struct {
	tokens float64
	at     time.Time
}

func newRateBuckets(r Rates) *rateBuckets {
	return &rateBuckets{r: r, by: map[string]*tokenBucket{}}
}

// allow takes a token from the request's partition and class, or says it
// is over the rate.
func (b *rateBuckets) allow(r *http.Request) bool {
	rate, class := b.r.Write, "w"
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		rate, class = b.r.Read, "r"
	}
	if rate <= 0 {
		return true
	}
	burst := b.r.Burst
	if b.r.BurstSeconds > 0 {
		burst = rate * b.r.BurstSeconds
	}
	if burst <= 0 {
		burst = math.Max(1, rate/10)
	}
	key := class + " " + partition(r.URL.Path, b.r.PrefixDepth)
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.by[key]
	if t == nil {
		t = &tokenBucket{tokens: burst, at: now}
		b.by[key] = t
	}
	t.tokens = math.Min(burst, t.tokens+now.Sub(t.at).Seconds()*rate)
	t.at = now
	if t.tokens < 1 {
		return false
	}
	t.tokens--
	return true
}

// partition is a path-style request's bucket and its key's first depth
// components.
func partition(path string, depth int) string {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if depth <= 0 || key == "" {
		return bucket
	}
	parts := strings.SplitN(key, "/", depth+1)
	if len(parts) > depth {
		parts = parts[:depth]
	}
	return bucket + "/" + strings.Join(parts, "/")
}

// Limiter refuses what S3 refuses past its request rates, for a server of
// its own in front of S3 (the bench's): Allow says whether a request is
// within them, and WriteSlowDown answers one that is not as S3 does.
type Limiter struct{ b *rateBuckets }

// NewLimiter serves r.
func NewLimiter(r Rates) *Limiter { return &Limiter{newRateBuckets(r)} }

// Allow takes a token from the request's partition and class, or says it
// is over the rate.
func (l *Limiter) Allow(r *http.Request) bool { return l.b.allow(r) }

// WriteSlowDown answers r 503 SlowDown, with S3's body.
func WriteSlowDown(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
}
