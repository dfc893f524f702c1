// Package faultproxy is an HTTP reverse proxy for tests that sits between an
// S3 client and an S3-compatible server on loopback and injects the failures
// S3 really produces: 500 InternalError, 503 SlowDown and 503
// ServiceUnavailable (with S3's XML error body), 200 OK with an error in the
// body (CopyObject, UploadPartCopy, CompleteMultipartUpload), requests that
// hang until the client gives up, and connections reset before the server
// saw the request, after it acted on it (the response is lost, the effect is
// not) or half-way through the response's body, and 409
// ConditionalRequestConflict to a conditional completion, its upload then
// gone. A rule can fire in a burst: every matching request for a while.
//
// Faults are chosen per request by S3 operation, derived from the method, the
// query and the headers the way S3 routes them (Classify). Each decision is a
// hash of the seed, the request's identity (operation, path, part number,
// range, copy source; not the upload id, dates or signatures) and how many
// times that identity was seen before, so a run injects the same faults
// whatever the interleaving of concurrent requests.
//
// Signing: SigV4 signs the Host header. Point the client at the proxy; the
// proxy forwards with the Host the client used, and the server verifies the
// signature against that Host (versitygw does; its own address is only where
// the bytes go).
package faultproxy

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op is an S3 API operation.
type Op string

// The operations Classify tells apart.
const (
	ListBuckets             Op = "ListBuckets"
	CreateBucket            Op = "CreateBucket"
	HeadBucket              Op = "HeadBucket"
	ListObjectsV2           Op = "ListObjectsV2"
	ListObjects             Op = "ListObjects"
	ListMultipartUploads    Op = "ListMultipartUploads"
	DeleteObjects           Op = "DeleteObjects"
	GetObject               Op = "GetObject"
	GetObjectAttributes     Op = "GetObjectAttributes"
	HeadObject              Op = "HeadObject"
	PutObject               Op = "PutObject"
	CopyObject              Op = "CopyObject"
	DeleteObject            Op = "DeleteObject"
	CreateMultipartUpload   Op = "CreateMultipartUpload"
	UploadPart              Op = "UploadPart"
	UploadPartCopy          Op = "UploadPartCopy"
	CompleteMultipartUpload Op = "CompleteMultipartUpload"
	AbortMultipartUpload    Op = "AbortMultipartUpload"
	ListParts               Op = "ListParts"
	Other                   Op = "Other"
)

// WorkflowOps are the operations s3zip's workflow calls.
var WorkflowOps = []Op{
	ListObjectsV2, GetObject, HeadObject, PutObject, DeleteObject, DeleteObjects,
	CreateMultipartUpload, UploadPart, UploadPartCopy, CompleteMultipartUpload,
	AbortMultipartUpload, ListParts,
}

// Classify names the S3 operation of a path-style request.
func Classify(r *http.Request) Op {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	has := func(k string) bool { _, ok := q[k]; return ok }
	copySrc := r.Header.Get("X-Amz-Copy-Source") != ""
	if bucket == "" {
		return ListBuckets
	}
	if key == "" {
		switch r.Method {
		case http.MethodGet:
			switch {
			case has("uploads"):
				return ListMultipartUploads
			case q.Get("list-type") == "2":
				return ListObjectsV2
			}
			return ListObjects
		case http.MethodHead:
			return HeadBucket
		case http.MethodPut:
			return CreateBucket
		case http.MethodPost:
			if has("delete") {
				return DeleteObjects
			}
		}
		return Other
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case has("uploadId"):
			return ListParts
		case has("attributes"):
			return GetObjectAttributes
		}
		return GetObject
	case http.MethodHead:
		return HeadObject
	case http.MethodPut:
		switch {
		case has("partNumber") && has("uploadId") && copySrc:
			return UploadPartCopy
		case has("partNumber") && has("uploadId"):
			return UploadPart
		case copySrc:
			return CopyObject
		}
		return PutObject
	case http.MethodPost:
		switch {
		case has("uploads"):
			return CreateMultipartUpload
		case has("uploadId"):
			return CompleteMultipartUpload
		}
	case http.MethodDelete:
		if has("uploadId") {
			return AbortMultipartUpload
		}
		return DeleteObject
	}
	return Other
}

// Fault is what the proxy does instead of (or after) forwarding a request.
type Fault string

const (
	// InternalError answers 500 with S3's InternalError body; the server never sees the request.
	InternalError Fault = "500"
	// SlowDown answers 503 with S3's SlowDown body; the server never sees the request.
	SlowDown Fault = "503"
	// Timeout holds the request, unanswered, until the client gives up
	// (or Config.Hold passes), then drops the connection.
	Timeout Fault = "timeout"
	// Reset resets the connection (TCP RST) before forwarding.
	Reset Fault = "reset"
	// ResetAfter forwards the request, lets the server act on it, then
	// resets the connection instead of answering: the effect happened,
	// the client does not know it.
	ResetAfter Fault = "reset-after"
	// ServiceUnavailable answers 503 with S3's ServiceUnavailable body; the
	// server never sees the request.
	ServiceUnavailable Fault = "503-unavailable"
	// ErrorIn200 answers 200 OK with S3's InternalError in the body, as S3
	// may answer CopyObject, UploadPartCopy and CompleteMultipartUpload once
	// it has sent its headers: the operation did not happen (the server
	// never sees the request).
	ErrorIn200 Fault = "200-error"
	// ResetMidBody forwards the request, sends the client the answer's
	// headers and the first half of its body (at most StallAfter bytes),
	// then resets the connection: the effect happened, the answer is cut.
	ResetMidBody Fault = "reset-mid-body"
	// Stall forwards the request and sends the client the answer's
	// headers and its first StallAfter bytes, then nothing: the connection
	// stays open until the client gives up (or Config.Hold passes). Not in
	// AllFaults: a client without an idle timeout waits out the Hold.
	Stall Fault = "stall"
	// ConditionalConflict answers a conditional write (If-None-Match or
	// If-Match) 409 ConditionalRequestConflict, as S3 answers one that met
	// a conflicting operation; the server never sees it. A PutObject so
	// answered wrote nothing and may be sent again. A completion is taken
	// at S3's word, "re-initiate the multipart upload and re-upload each
	// part": from then on its upload answers 404 NoSuchUpload to all but
	// its abort, which is forwarded so that nothing is left on the server.
	// A rule with only this fault matches conditional PutObject and
	// CompleteMultipartUpload requests only.
	ConditionalConflict Fault = "409-conflict"
)

// StallAfter is how many bytes of a body a Stall sends before it stops.
const StallAfter = 1024

// AllFaults lists the fault kinds any request may meet.
var AllFaults = []Fault{InternalError, SlowDown, Timeout, Reset, ResetAfter}

// kinds lists every fault kind, for Summary.
var kinds = []Fault{InternalError, SlowDown, ServiceUnavailable, ErrorIn200, Timeout, Reset, ResetAfter, ResetMidBody, Stall, ConditionalConflict}

// Rule injects one of Faults (chosen evenly) into a Rate fraction of the
// requests for Ops (every operation when empty).
type Rule struct {
	Ops    []Op
	Faults []Fault
	Rate   float64
	// Limit caps how many faults this rule injects (0: no cap).
	Limit int
	// After is how many matching requests pass before the rule may fire:
	// with Rate 1 and Limit n, the rule answers a burst of n requests in a
	// row, from the (After+1)-th on.
	After int
	// Bucket, when set, limits the rule to requests for that bucket (a
	// destination's writes failing while the work bucket's succeed).
	Bucket string
}

// Config configures a proxy.
type Config struct {
	Target string // the server's base URL, e.g. http://127.0.0.1:7070
	Seed   uint64
	Rules  []Rule        // the first matching rule that fires wins
	Hold   time.Duration // longest a Timeout holds a request (default 30s)
	// Latency, when set, is S3's time to first byte: no forwarded request
	// is answered sooner than this after it arrived (loopback answers in a
	// tenth of a millisecond, S3 in 10–30 ms), so what many requests in
	// flight gain over one at a time shows here as it does there.
	Latency time.Duration
	// SourceSize, when set, makes the proxy enforce, whatever the rules, an
	// S3 rule versitygw does not: a ranged UploadPartCopy of a source of
	// MinRangedCopySource bytes or less is answered 400 InvalidRequest, as
	// S3 answers it (strict.go). It returns a source object's size (the
	// test's own client asks the server).
	SourceSize func(bucket, key, versionID string) (int64, error)
	// Rates, when set, has the proxy refuse what S3 refuses past its
	// request rates: 503 SlowDown (rates.go).
	Rates *Rates
	// CompletedGone, when set, answers a CompleteMultipartUpload of an
	// upload whose completion the proxy forwarded and then cut (ResetAfter,
	// ResetMidBody) 404 NoSuchUpload, as S3 may answer the retry of a
	// completion that happened (versitygw answers it as the first).
	CompletedGone bool
}

// Proxy is a running fault proxy.
type Proxy struct {
	cfg    Config
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	mu     sync.Mutex
	rules  []Rule
	fired  []int          // per rule
	match  []int          // requests each rule matched
	seen   map[string]int // occurrences per request identity
	counts map[Op]*OpCount
	held   sync.WaitGroup
	// refused are the requests answered as S3 would refuse them (strict.go).
	refused []string
	rates   *rateBuckets // nil without Config.Rates
	// completed are the uploads whose completion was forwarded and cut.
	completed map[string]bool
	// conflicted are the uploads a ConditionalConflict ended.
	conflicted map[string]bool
}

// OpCount is what happened to one operation's requests.
type OpCount struct {
	Requests int
	Injected map[Fault]int
}

// Start listens on 127.0.0.1 (a free port) and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	target, err := url.Parse(cfg.Target)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not a base URL", cfg.Target)
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 30 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{cfg: cfg, ln: ln, seen: map[string]int{}, counts: map[Op]*OpCount{}, completed: map[string]bool{}, conflicted: map[string]bool{}}
	if cfg.Rates != nil {
		p.rates = newRateBuckets(*cfg.Rates)
	}
	p.setRules(cfg.Rules)
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // SigV4 signed the Host the client used
		},
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, DisableCompression: true},
		ModifyResponse: func(resp *http.Response) error {
			if at, ok := resp.Request.Context().Value(arrivalKey{}).(time.Time); ok {
				time.Sleep(cfg.Latency - time.Since(at))
			}
			return nil
		},
		// An S3 client must see transport trouble as such, not a proxy's 502.
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if _, ok := w.(http.Hijacker); ok {
				reset(w)
			}
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is the proxy's base URL: give it to the client as its endpoint.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy, dropping held requests.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.held.Wait()
	return err
}

// SetRules replaces the rules (e.g. nil to stop injecting) and their counts of fired faults.
func (p *Proxy) SetRules(rules []Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setRules(rules)
}

func (p *Proxy) setRules(rules []Rule) {
	p.rules = append([]Rule(nil), rules...)
	p.fired = make([]int, len(rules))
	p.match = make([]int, len(rules))
}

// Counts returns a copy of the per-operation counts.
func (p *Proxy) Counts() map[Op]OpCount {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Op]OpCount, len(p.counts))
	for op, c := range p.counts {
		inj := make(map[Fault]int, len(c.Injected))
		for f, n := range c.Injected {
			inj[f] = n
		}
		out[op] = OpCount{Requests: c.Requests, Injected: inj}
	}
	return out
}

// Injected is the number of faults injected so far, and of requests seen.
func (p *Proxy) Injected() (faults, requests int) {
	for _, c := range p.Counts() {
		requests += c.Requests
		for _, n := range c.Injected {
			faults += n
		}
	}
	return faults, requests
}

// Summary says what was injected, e.g. "7 faults in 212 requests (500×3 reset×4)".
func (p *Proxy) Summary() string {
	byFault := map[Fault]int{}
	faults, requests := 0, 0
	for _, c := range p.Counts() {
		requests += c.Requests
		for f, n := range c.Injected {
			byFault[f] += n
			faults += n
		}
	}
	var met []string
	for _, f := range kinds {
		if n := byFault[f]; n > 0 {
			met = append(met, fmt.Sprintf("%s×%d", f, n))
		}
	}
	s := fmt.Sprintf("%d faults in %d requests", faults, requests)
	if len(met) > 0 {
		s += " (" + strings.Join(met, " ") + ")"
	}
	return s
}

// arrivalKey holds when a request arrived, for Config.Latency.
type arrivalKey struct{}

// ServeHTTP decides the request's fate and carries it out.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.cfg.Latency > 0 {
		r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, time.Now()))
	}
	op := Classify(r)
	if why, refuse := p.strict(op, r); refuse {
		p.mu.Lock()
		p.refused = append(p.refused, why)
		p.mu.Unlock()
		writeError(w, r, http.StatusBadRequest, "InvalidRequest", "The specified copy source is not supported as a byte-range copy source. ("+xmlEscape(why)+")")
		return
	}
	if p.cfg.CompletedGone && op == CompleteMultipartUpload {
		id := r.URL.Query().Get("uploadId")
		p.mu.Lock()
		gone := p.completed[id]
		p.mu.Unlock()
		if gone {
			writeError(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
			return
		}
	}
	if id := r.URL.Query().Get("uploadId"); id != "" && op != AbortMultipartUpload {
		p.mu.Lock()
		ended := p.conflicted[id]
		p.mu.Unlock()
		if ended {
			writeError(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
			return
		}
	}
	fault := p.decide(op, r)
	if op == CompleteMultipartUpload && (fault == ResetAfter || fault == ResetMidBody) {
		p.mu.Lock()
		p.completed[r.URL.Query().Get("uploadId")] = true
		p.mu.Unlock()
	}
	if fault == "" && p.rates != nil && !p.rates.allow(r) {
		fault = SlowDown
		p.mu.Lock()
		p.counts[op].Injected[SlowDown]++
		p.mu.Unlock()
	}
	switch fault {
	case InternalError:
		writeError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case SlowDown:
		writeError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case ServiceUnavailable:
		writeError(w, r, http.StatusServiceUnavailable, "ServiceUnavailable", "Service is unable to handle request.")
	case ErrorIn200:
		writeError(w, r, http.StatusOK, "InternalError", "We encountered an internal error. Please try again.")
	case ConditionalConflict:
		p.mu.Lock()
		if id := r.URL.Query().Get("uploadId"); id != "" {
			p.conflicted[id] = true
		}
		p.mu.Unlock()
		writeError(w, r, http.StatusConflict, "ConditionalRequestConflict", "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part.")
	case ResetMidBody:
		p.rp.ServeHTTP(&cuttingWriter{ResponseWriter: w, left: StallAfter}, r)
		panic(http.ErrAbortHandler) // a body with nothing to cut: dropped all the same
	case Timeout:
		p.held.Add(1)
		defer p.held.Done()
		// Only once the body is read does the server notice the client leave.
		_, _ = io.Copy(io.Discard, r.Body)
		t := time.NewTimer(p.cfg.Hold)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-t.C:
		}
		reset(w)
	case Stall:
		p.held.Add(1)
		defer p.held.Done()
		p.rp.ServeHTTP(&stallingWriter{ResponseWriter: w, left: StallAfter, hold: p.cfg.Hold, done: r.Context().Done()}, r)
		panic(http.ErrAbortHandler) // then the connection is dropped
	case Reset:
		reset(w)
	case ResetAfter:
		d := &discard{h: http.Header{}}
		p.rp.ServeHTTP(d, r)
		reset(w)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

func (p *Proxy) decide(op Op, r *http.Request) Fault {
	id := identity(op, r)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts[op]
	if c == nil {
		c = &OpCount{Injected: map[Fault]int{}}
		p.counts[op] = c
	}
	c.Requests++
	n := p.seen[id]
	p.seen[id] = n + 1
	for i, rule := range p.rules {
		if len(rule.Faults) == 0 || rule.Rate <= 0 || (rule.Limit > 0 && p.fired[i] >= rule.Limit) || !matches(rule.Ops, op) || !inBucket(rule.Bucket, r) {
			continue
		}
		if onlyConflicts(rule.Faults) && ((op != CompleteMultipartUpload && op != PutObject) || !conditional(r)) {
			continue
		}
		if p.match[i]++; p.match[i] <= rule.After {
			continue
		}
		h := hash64(p.cfg.Seed, uint64(i), id, uint64(n))
		if float64(h>>11)/float64(1<<53) >= rule.Rate {
			continue
		}
		f := rule.Faults[hash64(p.cfg.Seed^0x9e3779b97f4a7c15, uint64(i), id, uint64(n))%uint64(len(rule.Faults))]
		p.fired[i]++
		c.Injected[f]++
		return f
	}
	return ""
}

// onlyConflicts says whether faults are ConditionalConflict alone.
func onlyConflicts(faults []Fault) bool {
	for _, f := range faults {
		if f != ConditionalConflict {
			return false
		}
	}
	return true
}

// conditional says whether a request writes only if a condition holds.
func conditional(r *http.Request) bool {
	return r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Match") != ""
}

// inBucket reports whether the path-style request r is for bucket ("":
// any bucket).
func inBucket(bucket string, r *http.Request) bool {
	b, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return bucket == "" || b == bucket
}

func matches(ops []Op, op Op) bool {
	if len(ops) == 0 {
		return true
	}
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// identity is what makes a request "the same request" across retries and
// runs: not the upload id (the server makes it up), dates or signatures.
func identity(op Op, r *http.Request) string {
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		lk := strings.ToLower(k)
		if lk == "uploadid" || lk == "x-id" || strings.HasPrefix(lk, "x-amz-") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(string(op))
	b.WriteString(" ")
	b.WriteString(r.URL.Path)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, strings.Join(q[k], ","))
	}
	for _, h := range []string{"Range", "X-Amz-Copy-Source", "X-Amz-Copy-Source-Range"} {
		if v := r.Header.Get(h); v != "" {
			fmt.Fprintf(&b, " %s:%s", h, v)
		}
	}
	return b.String()
}

func hash64(seed, rule uint64, id string, n uint64) uint64 {
	h := fnv.New64a()
	var buf [24]byte
	binary.LittleEndian.PutUint64(buf[0:], seed)
	binary.LittleEndian.PutUint64(buf[8:], rule)
	binary.LittleEndian.PutUint64(buf[16:], n)
	h.Write(buf[:])
	io.WriteString(h, id)
	// splitmix64 finalizer: FNV's low bits alone are not uniform enough.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// writeError answers like S3 does. The request body is read first, so the
// client sees the error and not a connection closed while it was sending.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("X-Amz-Request-Id", "faultproxy")
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>faultproxy</RequestId></Error>`,
		code, msg, xmlEscape(r.URL.Path))
	if status == http.StatusOK {
		// S3 keeps such a connection open with whitespace before it knows.
		body = "\n \n" + body
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// reset closes the client's connection with a TCP RST and no response.
func reset(w http.ResponseWriter) {
	if !resetConn(w) {
		panic(http.ErrAbortHandler)
	}
}

// resetConn closes the client's connection with a TCP RST, after what was
// written and flushed; false when it cannot take the connection over.
func resetConn(w http.ResponseWriter) bool {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return true
}

// discard is a ResponseWriter that drops the server's answer.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// stallingWriter passes the headers and the first left bytes of a body,
// then blocks the copy until the client leaves or hold passes.
type stallingWriter struct {
	http.ResponseWriter
	left    int
	started bool
	hold    time.Duration
	done    <-chan struct{}
}

func (s *stallingWriter) Write(b []byte) (int, error) {
	if !s.started {
		// A body shorter than StallAfter (a completion's XML) stops half-way.
		s.started = true
		var cl int
		if _, err := fmt.Sscan(s.Header().Get("Content-Length"), &cl); err == nil && cl <= s.left {
			s.left = cl / 2
		}
	}
	n := min(len(b), s.left)
	if n > 0 {
		if _, err := s.ResponseWriter.Write(b[:n]); err != nil {
			return 0, err
		}
		s.left -= n
		if f, ok := s.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
	if n == len(b) {
		return n, nil
	}
	t := time.NewTimer(s.hold)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
	}
	return n, errStalled
}

// Flush sends what was written so far (the reverse proxy flushes as it copies).
func (s *stallingWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var errStalled = fmt.Errorf("faultproxy: stalled")

// cuttingWriter passes the headers and the first half of a body (at most
// left bytes), then resets the connection.
type cuttingWriter struct {
	http.ResponseWriter
	left    int
	started bool
}

func (c *cuttingWriter) Write(b []byte) (int, error) {
	if !c.started {
		c.started = true
		var cl int
		if _, err := fmt.Sscan(c.Header().Get("Content-Length"), &cl); err == nil && cl <= 2*c.left {
			c.left = cl / 2
		}
	}
	n := min(len(b), c.left)
	if n > 0 {
		if _, err := c.ResponseWriter.Write(b[:n]); err != nil {
			return 0, err
		}
		c.left -= n
	}
	if c.left > 0 {
		return n, nil
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	resetConn(c.ResponseWriter)
	return n, errCut
}

// Flush sends what was written so far.
func (c *cuttingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var errCut = fmt.Errorf("faultproxy: connection reset mid-body")
