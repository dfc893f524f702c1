package s3rate

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Timeouts bound how long a connection may go quiet. The SDK's default
// HTTP client has a connect timeout and nothing else: a server that sends
// a response's headers and then nothing holds the request (on Lambda, the
// worker) until the function's own timeout.
type Timeouts struct {
	// Connect bounds a TCP connect (default 5 s).
	Connect time.Duration
	// Header bounds the wait for a response's headers once the request is
	// sent (default 60 s: S3 answers a copy of 5 GiB or a completion of
	// 10,000 parts with its headers first, and a GET within milliseconds).
	Header time.Duration
	// IdleBody bounds the wait for the next bytes of the body of an
	// answer to anything but a GET (default 30 s): S3 may hold a copy's or
	// a completion's answer open for minutes, sending a space now and then
	// while it works. A body that delivers nothing for that long is
	// abandoned with ErrStalled, which the retryer retries.
	IdleBody time.Duration
	// IdleRead bounds the wait for the next bytes of a GET's body (default
	// 5 s): S3 sends an object's bytes, a listing or a part list as fast as
	// the link takes them, so a few seconds of silence is a stall, and the
	// readers that resume a body from the byte they reached (Resume, the
	// workflows' ranged reads) lose no more than that to it.
	IdleRead time.Duration
}

// DefaultTimeouts are the timeouts a zero Timeouts takes.
var DefaultTimeouts = Timeouts{Connect: 5 * time.Second, Header: 60 * time.Second, IdleBody: 30 * time.Second, IdleRead: 5 * time.Second}

func (t Timeouts) withDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = DefaultTimeouts.Connect
	}
	if t.Header <= 0 {
		t.Header = DefaultTimeouts.Header
	}
	if t.IdleBody <= 0 {
		t.IdleBody = DefaultTimeouts.IdleBody
	}
	if t.IdleRead <= 0 {
		t.IdleRead = DefaultTimeouts.IdleRead
	}
	return t
}

// ErrStalled is a response body that delivered no byte for the idle-body
// timeout.
var ErrStalled = stallError{}

type stallError struct{}

func (stallError) Error() string {
	return "the connection stalled: no byte of the response body arrived within the idle timeout"
}
func (stallError) Timeout() bool   { return true }
func (stallError) Temporary() bool { return true }

// NewHTTPClient is the SDK's buildable HTTP client with t's timeouts, its
// response bodies abandoned when they go quiet for t.IdleRead (a GET's)
// or t.IdleBody (any other's).
func NewHTTPClient(t Timeouts) *StallingClient {
	t = t.withDefaults()
	c := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = t.Connect }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = t.Header
			tr.TLSHandshakeTimeout = t.Connect
			tr.MaxIdleConnsPerHost = 256
		})
	return &StallingClient{c: c, idle: t.IdleBody, idleRead: t.IdleRead}
}

// StallingClient sends requests with an awshttp.BuildableClient and
// watches their response bodies.
type StallingClient struct {
	c              *awshttp.BuildableClient
	idle, idleRead time.Duration
}

// Do sends the request; the response's body fails with ErrStalled when no
// byte arrives for the idle timeout of its method.
func (s *StallingClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := s.c.Do(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	idle := s.idle
	if req.Method == http.MethodGet {
		idle = s.idleRead
	}
	resp.Body = watchBody(resp.Body, idle)
	return resp, nil
}

// watchBody is body, closed and failing with ErrStalled when a Read waits
// longer than idle. Only a Read in progress is timed: a reader that takes
// its time between reads (its upload waiting its turn) stalls nothing.
func watchBody(body io.ReadCloser, idle time.Duration) io.ReadCloser {
	w := &watchedBody{body: body, idle: idle}
	w.timer = time.AfterFunc(time.Hour, w.stall)
	w.timer.Stop()
	return w
}

type watchedBody struct {
	body  io.ReadCloser
	idle  time.Duration
	timer *time.Timer

	mu      sync.Mutex
	stalled bool
}

func (w *watchedBody) stall() {
	w.mu.Lock()
	w.stalled = true
	w.mu.Unlock()
	w.body.Close() // unblocks the Read waiting for bytes
}

func (w *watchedBody) Read(p []byte) (int, error) {
	w.timer.Reset(w.idle)
	n, err := w.body.Read(p)
	w.timer.Stop()
	if err != nil {
		w.mu.Lock()
		stalled := w.stalled
		w.mu.Unlock()
		if stalled && !errors.Is(err, io.EOF) {
			return n, ErrStalled
		}
		if stalled && n == 0 {
			return 0, ErrStalled
		}
	}
	return n, err
}

func (w *watchedBody) Close() error {
	w.timer.Stop()
	return w.body.Close()
}

// The environment variables that set Timeouts (Go durations: "45s", "2m").
const (
	EnvConnectTimeout = "S3ZIP_CONNECT_TIMEOUT"
	EnvHeaderTimeout  = "S3ZIP_HEADER_TIMEOUT"
	EnvIdleTimeout    = "S3ZIP_IDLE_TIMEOUT"
	EnvReadIdle       = "S3ZIP_READ_IDLE_TIMEOUT"
)

// TimeoutsFromEnv reads Timeouts from the environment (getenv): a variable
// unset keeps the default; one that is not a positive duration is an error
// naming it.
func TimeoutsFromEnv(getenv func(string) string) (Timeouts, error) {
	var t Timeouts
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{EnvConnectTimeout, &t.Connect}, {EnvHeaderTimeout, &t.Header}, {EnvIdleTimeout, &t.IdleBody}, {EnvReadIdle, &t.IdleRead}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return t, fmt.Errorf("%s=%q: want a positive duration such as 30s or 2m", v.name, s)
		}
		*v.to = d
	}
	return t.withDefaults(), nil
}
