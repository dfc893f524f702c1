package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// latencyProxy stands in front of versitygw, in the server's namespace, and
// answers no request sooner than delay after it arrived: S3's time to first
// byte (10-30 ms) where loopback answers in a tenth of a millisecond. The
// delay is S3's, not the network's, so it is added once per request and
// does not slow a transfer down once its first byte has come (tc netem, the
// other way to add it, is not in every kernel, and a propagation delay
// would also cap TCP's window).
type latencyProxy struct {
	delay time.Duration
	// observe, when set, is told every request's S3 operation.
	observe func(faultproxy.Op)
	// limit, while set (setRates), refuses what S3 refuses past its
	// request rates, as S3 answers it: 503 SlowDown after its time to
	// first byte; slowDowns counts those answers.
	limit     atomic.Pointer[faultproxy.Limiter]
	slowDowns atomic.Int64
	rp        *httputil.ReverseProxy
	srv       *http.Server
}

// setRates starts refusing past r (nil: never refuses) with a fresh
// second's burst, and returns the SlowDown answers so far.
func (p *latencyProxy) setRates(r *faultproxy.Rates) int64 {
	if r == nil {
		p.limit.Store(nil)
	} else {
		p.limit.Store(faultproxy.NewLimiter(*r))
	}
	return p.slowDowns.Load()
}

type arrivalKey struct{}

// startLatencyProxy listens on addr inside namespace ns and forwards to
// backend (an address inside the same namespace). SigV4 signs the Host
// header, so requests are forwarded with the Host the client used.
func startLatencyProxy(ns, addr, backend string, delay time.Duration) (*latencyProxy, error) {
	l, err := listenIn(ns, addr)
	if err != nil {
		return nil, err
	}
	target := &url.URL{Scheme: "http", Host: backend}
	p := &latencyProxy{delay: delay}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			DialContext:         dialIn(ns),
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		FlushInterval: -1,
		BufferPool:    bufferPool{},
		ModifyResponse: func(resp *http.Response) error {
			if at, ok := resp.Request.Context().Value(arrivalKey{}).(time.Time); ok {
				if d := p.delay - time.Since(at); d > 0 {
					time.Sleep(d)
				}
			}
			return nil
		},
		ErrorLog: nil,
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.observe != nil {
			p.observe(faultproxy.Classify(r))
		}
		if l := p.limit.Load(); l != nil && !l.Allow(r) {
			p.slowDowns.Add(1)
			time.Sleep(p.delay)
			faultproxy.WriteSlowDown(w, r)
			return
		}
		p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), arrivalKey{}, time.Now())))
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *latencyProxy) close() { _ = p.srv.Close() }

// bufferPool gives the proxy 256 KiB copy buffers instead of 32 KiB ones.
type bufferPool struct{}

var proxyBuffers = make(chan []byte, 256)

func (bufferPool) Get() []byte {
	select {
	case b := <-proxyBuffers:
		return b
	default:
		return make([]byte, 256<<10)
	}
}

func (bufferPool) Put(b []byte) {
	select {
	case proxyBuffers <- b:
	default:
	}
}

// listenIn opens a TCP listener inside namespace ns (a socket belongs to the
// namespace of the thread that creates it).
func listenIn(ns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- result{nil, fmt.Errorf("open namespace %s: %w", ns, err)}
			return
		}
		defer f.Close()
		if _, _, errno := syscall.RawSyscall(sysSetns(), f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
			done <- result{nil, fmt.Errorf("setns %s: %w", ns, errno)}
			return
		}
		l, err := net.Listen("tcp", addr)
		done <- result{l, err}
	}()
	r := <-done
	return r.l, r.err
}
