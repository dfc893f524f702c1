package s3rate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
)

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A limiter lets everything through until S3 first says slow down, then
// holds requests to half of what was being sent, cuts again at most once a
// cutEvery however many SlowDowns answer it, and climbs while requests
// succeed.
func TestLimiterDecreasesAndRecovers(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	l := newLimiter(c.now)
	for range 1000 {
		if d := l.reserve(); d != 0 {
			t.Fatalf("unthrottled limiter held a request %v", d)
		}
		c.add(time.Millisecond) // 1,000 a second
	}
	l.Throttled()
	if r := l.Stats().Rate; r < 400 || r > 600 {
		t.Fatalf("after the first SlowDown at ~1,000/s the rate is %.0f, want about half", r)
	}
	first := l.Stats().Rate
	for range 50 {
		l.Throttled() // the same excess answered by the requests in flight
	}
	if r := l.Stats().Rate; r != first {
		t.Fatalf("SlowDowns within %v cut the rate again: %.0f, was %.0f", cutEvery, r, first)
	}
	// Held to the rate: over a second at most the rate and its burst pass.
	passed := 0
	for range 2000 {
		if l.reserve() == 0 {
			passed++
		}
		c.add(500 * time.Microsecond)
	}
	if max := int(first) + int(first/10) + 1; passed > max {
		t.Errorf("%d requests passed in a second at rate %.0f, want at most %d", passed, first, max)
	}
	// Succeeding requests raise it, a twentieth every raiseEvery.
	for range 40 {
		c.add(raiseEvery)
		l.Succeeded()
	}
	if r := l.Stats().Rate; r < first*4 {
		t.Errorf("after 10 s of successes the rate is %.0f, want it well above %.0f", r, first)
	}
	if s := l.Stats(); s.Throttled != 51 || s.Succeeded != 40 {
		t.Errorf("stats %+v, want 51 throttled and 40 succeeded", s)
	}
}

// Never below minRate: a limiter keeps probing.
func TestLimiterFloor(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	l := newLimiter(c.now)
	for range 100 {
		l.Throttled()
		c.add(time.Second)
	}
	if r := l.Stats().Rate; r != minRate {
		t.Errorf("rate %.2f after 100 cuts, want the floor %.0f", r, minRate)
	}
}

// slowS3 serves GETs of one object, answering 503 SlowDown past a rate, as
// S3 does past a prefix's.
type slowS3 struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	at     time.Time
	served atomic.Int64
	denied atomic.Int64
}

func (s *slowS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := time.Now()
	s.tokens = min(s.rate/10, s.tokens+now.Sub(s.at).Seconds()*s.rate)
	s.at = now
	ok := s.tokens >= 1
	if ok {
		s.tokens--
	}
	s.mu.Unlock()
	if !ok {
		s.denied.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	}
	s.served.Add(1)
	w.Header().Set("Content-Length", "5")
	w.Header().Set("ETag", `"e"`)
	io.WriteString(w, "hello")
}

func testClient(endpoint string, cfg Config) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}}, Options(cfg))
}

// 64 goroutines asking a server that serves 200 requests a second for 600
// objects: every request succeeds, and the limiter took most of the
// refusals' place (the time it took, against the time the rate allows, is
// logged: tests/faults' throttling scenarios judge it).
func TestClientSlowsToTheRateServed(t *testing.T) {
	srv := &slowS3{rate: 200, at: time.Now()}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	limits := &Limits{}
	c := testClient(ts.URL, Config{Limits: limits, MaxBackoff: time.Second})
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(64)
	const n = 600
	for i := range n {
		g.Go(func() error {
			out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String(fmt.Sprintf("k/%d", i))})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			_, err = io.ReadAll(out.Body)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("a request failed: %v", err)
	}
	took := time.Since(start)
	allowed := time.Duration(float64(n) / srv.rate * float64(time.Second))
	t.Logf("%d GETs in %v (the rate allows %v); %d SlowDown, limiter rate now %.0f/s", n, took.Round(time.Millisecond), allowed, srv.denied.Load(), limits.For("b", Read).Stats().Rate)
	if srv.served.Load() != n {
		t.Errorf("served %d, want %d", srv.served.Load(), n)
	}
	if d := srv.denied.Load(); d > n/2 {
		t.Errorf("%d SlowDowns for %d requests: the limiter did not hold the rate", d, n)
	}
}

// A request that fails for another reason than throttling is tried
// Attempts times; a throttled one goes on.
func TestRetryerTriesThrottlesLonger(t *testing.T) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `<Error><Code>InternalError</Code><Message>x</Message></Error>`)
	}))
	defer ts.Close()
	c := testClient(ts.URL, Config{Limits: &Limits{}, Attempts: 3, ThrottleAttempts: 40, MaxBackoff: time.Millisecond})
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err == nil || calls.Load() != 3 {
		t.Fatalf("500s: %d calls, error %v; want 3 calls and an error", calls.Load(), err)
	}

	calls.Store(0)
	srv := &slowS3{rate: 0.0001, at: time.Now()} // refuses all
	ts2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		srv.ServeHTTP(w, r)
	}))
	defer ts2.Close()
	c = testClient(ts2.URL, Config{Limits: &Limits{}, Attempts: 3, ThrottleAttempts: 6, MaxBackoff: time.Millisecond})
	_, err = c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err == nil || calls.Load() != 6 || !IsThrottle(err) {
		t.Fatalf("SlowDowns: %d calls, error %v; want 6 calls and a SlowDown", calls.Load(), err)
	}
	if advice := SlowDownAdvice(err, "b", "p/q/k"); advice == "" || !strings.Contains(advice, "s3://b/p/q/") || !strings.Contains(advice, "fewer workers") {
		t.Errorf("advice %q: want the bucket, the prefix and what to do", advice)
	}
}

// A conditional PUT answered 409 ConditionalRequestConflict wrote nothing
// and is sent again; a completion so answered ended its upload, so it is
// not (the caller starts the upload again).
func TestConflictRetriedForPutOnly(t *testing.T) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 || r.URL.Query().Has("uploadId") {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `<Error><Code>ConditionalRequestConflict</Code><Message>A conflicting operation occurred.</Message></Error>`)
			return
		}
		w.Header().Set("ETag", `"e"`)
	}))
	defer ts.Close()
	c := testClient(ts.URL, Config{Limits: &Limits{}, Attempts: 3, MaxBackoff: time.Millisecond})
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	if err != nil || calls.Load() != 2 {
		t.Fatalf("put: %d calls, error %v; want 2 calls, the second written", calls.Load(), err)
	}
	calls.Store(1)
	_, err = c.CompleteMultipartUpload(context.Background(), &s3.CompleteMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String("k"), UploadId: aws.String("u"), IfNoneMatch: aws.String("*")})
	if err == nil || calls.Load() != 2 || !strings.Contains(err.Error(), "ConditionalRequestConflict") {
		t.Fatalf("completion: %d calls, error %v; want 1 call and its 409", calls.Load()-1, err)
	}
}

// A body that sends its first bytes and then nothing fails with
// ErrStalled after the idle timeout, not when the server gives up.
func TestStalledBodyIsAbandoned(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1048576")
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 1024))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	c := testClient(ts.URL, Config{Limits: &Limits{}, Timeouts: Timeouts{IdleRead: 300 * time.Millisecond}})
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	start := time.Now()
	n, err := io.Copy(io.Discard, out.Body)
	took := time.Since(start)
	if !errors.Is(err, ErrStalled) || n != 1024 {
		t.Fatalf("read %d bytes, error %v; want 1024 and ErrStalled", n, err)
	}
	if took > 2*time.Second {
		t.Errorf("the stall cost %v, want about the 300 ms idle timeout", took)
	}
}

// A GET's body is abandoned after the short IdleRead; a completion's
// answer, which S3 holds open with a space now and then while it works, is
// timed by the longer IdleBody.
func TestIdleTimeoutByMethod(t *testing.T) {
	const pause = 600 * time.Millisecond
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, " ")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(pause):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `<CompleteMultipartUploadResult><ETag>"e"</ETag></CompleteMultipartUploadResult>`)
	}))
	defer ts.Close()
	c := testClient(ts.URL, Config{Limits: &Limits{}, Attempts: 1, Timeouts: Timeouts{IdleRead: 100 * time.Millisecond, IdleBody: 5 * pause}})
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = io.ReadAll(out.Body)
	out.Body.Close()
	if took := time.Since(start); !errors.Is(err, ErrStalled) || took >= pause {
		t.Errorf("a GET's body quiet for %v: %v after %v; want ErrStalled after the 100 ms IdleRead", pause, err, took)
	}
	done, err := c.CompleteMultipartUpload(context.Background(), &s3.CompleteMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String("k"), UploadId: aws.String("u")})
	if err != nil || aws.ToString(done.ETag) != `"e"` {
		t.Errorf("a completion's answer quiet for %v: %v; want its ETag (IdleBody is %v)", pause, err, 5*pause)
	}
}

// A slow reader is not a stalled body: only a Read in progress is timed.
func TestSlowReaderIsNoStall(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "abc")
	}))
	defer ts.Close()
	c := testClient(ts.URL, Config{Limits: &Limits{}, Timeouts: Timeouts{IdleRead: 100 * time.Millisecond}})
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	time.Sleep(300 * time.Millisecond) // the upload it feeds waits its turn
	b, err := io.ReadAll(out.Body)
	if err != nil || string(b) != "abc" {
		t.Fatalf("read %q, %v; want abc", b, err)
	}
}

func TestClassAndBucket(t *testing.T) {
	if classOf("GetObject") != Read || classOf("HeadObject") != Read || classOf("ListObjectsV2") != Read {
		t.Error("GET, HEAD and lists are reads")
	}
	if classOf("UploadPartCopy") != Write || classOf("PutObject") != Write || classOf("DeleteObjects") != Write {
		t.Error("copies, puts and deletes are writes")
	}
	if b := bucketOf(&s3.GetObjectInput{Bucket: aws.String("x")}); b != "x" {
		t.Errorf("bucketOf = %q", b)
	}
	if b := bucketOf(&s3.ListBucketsInput{}); b != "" {
		t.Errorf("bucketOf(ListBuckets) = %q", b)
	}
}

func TestTimeoutsFromEnv(t *testing.T) {
	env := map[string]string{EnvIdleTimeout: "45s", EnvReadIdle: "2s"}
	got, err := TimeoutsFromEnv(func(k string) string { return env[k] })
	if err != nil || got.IdleBody != 45*time.Second || got.IdleRead != 2*time.Second || got.Connect != DefaultTimeouts.Connect || got.Header != DefaultTimeouts.Header {
		t.Errorf("TimeoutsFromEnv = %+v, %v; want the idle timeouts 45s and 2s and the other defaults", got, err)
	}
	env = map[string]string{EnvHeaderTimeout: "soon"}
	if _, err := TimeoutsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), EnvHeaderTimeout) {
		t.Errorf("a bad duration gave %v, want an error naming %s", err, EnvHeaderTimeout)
	}
}
