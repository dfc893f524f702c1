package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// lambdaPool is N emulated Lambdas: each batch runs as its own `s3zip batch`
// process in a free namespace, at most one process per namespace at a time.
type lambdaPool struct {
	free     chan lambdaNet
	s3zip    string   // the s3zip binary
	endpoint string   // S3 endpoint as seen from the namespaces
	env      []string // credentials and region for the workers

	mu       sync.Mutex
	requests map[string]int64 // by API, summed over the workers' own counts
	peakRSS  int64            // largest VmHWM of one worker process
	batches  int
}

func newLambdaPool(nets []lambdaNet, n int, s3zip, endpoint string, env []string) *lambdaPool {
	p := &lambdaPool{free: make(chan lambdaNet, n), s3zip: s3zip, endpoint: endpoint, env: env}
	for _, l := range nets[:n] {
		p.free <- l
	}
	p.reset()
	return p
}

func (p *lambdaPool) reset() {
	p.mu.Lock()
	p.requests, p.peakRSS, p.batches = map[string]int64{}, 0, 0
	p.mu.Unlock()
}

// batchStats and batchError are the JSON lines `s3zip batch --stats` prints
// on stderr (cmd/s3zip/batch.go).
type batchStats struct {
	Requests     map[string]int64 `json:"requests"`
	PeakRSSBytes int64            `json:"peakRSSBytes"`
}

type batchError struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

// build is the Runner's BatchFunc.
func (p *lambdaPool) build(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
	var l lambdaNet
	select {
	case l = <-p.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { p.free <- l }()

	doc, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	args := []string{"netns", "exec", l.NS, p.s3zip, "batch", "--endpoint", p.endpoint, "--stats"}
	trace := os.Getenv("NETBENCH_TRACE") != ""
	if trace {
		args = append(args, "-v")
	}
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Env = p.env
	cmd.Stdin = bytes.NewReader(doc)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var stats *batchStats
	var failure *batchError
	var other []string
	sc := bufio.NewScanner(bytes.NewReader(stderr.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var s batchStats
		var e batchError
		switch {
		case json.Unmarshal([]byte(line), &e) == nil && e.ErrorType != "":
			failure = &e
		case json.Unmarshal([]byte(line), &s) == nil && s.Requests != nil:
			stats = &s
		default:
			other = append(other, line)
		}
	}
	if trace {
		// NETBENCH_TRACE=1: every batch's namespace, times and the worker's part log, on stderr.
		fmt.Fprintf(os.Stderr, "trace %s batch of %d: %s .. %s (%.2f s)\n%s\n", l.NS, len(in.Items), t0.Format("15:04:05.000"),
			time.Now().Format("15:04:05.000"), time.Since(t0).Seconds(), strings.Join(other, "\n"))
	}
	// ip netns exec execs the worker in place, so this is the worker's own
	// peak resident set (Linux reports KiB).
	rss := int64(0)
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024
		}
	}
	if stats != nil {
		rss = max(rss, stats.PeakRSSBytes)
	}
	p.mu.Lock()
	p.batches++
	p.peakRSS = max(p.peakRSS, rss)
	if stats != nil {
		for op, n := range stats.Requests {
			p.requests[op] += n
		}
	}
	p.mu.Unlock()

	if runErr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if failure == nil {
			return nil, fmt.Errorf("worker in %s: %v: %s", l.NS, runErr, tail(strings.Join(other, "\n"), 2000))
		}
		msg := fmt.Sprintf("worker in %s: %s: %s", l.NS, failure.ErrorType, failure.ErrorMessage)
		switch failure.ErrorType {
		case "TransientError", "DeadlineError": // the state machine retries these
			return nil, &stepfn.TransientError{Op: "batch", Err: errors.New(msg)}
		}
		return nil, errors.New(msg)
	}
	var out create.BatchResult
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("worker in %s: result is not a BatchResult: %v", l.NS, err)
	}
	parts := 0
	for _, it := range in.Items {
		parts += 1 + len(it.Carried) // a job builds the copies it carries too
	}
	if len(out.Parts) != parts {
		return nil, fmt.Errorf("worker in %s: %d results for %d parts", l.NS, len(out.Parts), parts)
	}
	return &out, nil
}

func (p *lambdaPool) snapshot() (map[string]int64, int64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req := make(map[string]int64, len(p.requests))
	for k, v := range p.requests {
		req[k] = v
	}
	return req, p.peakRSS, p.batches
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// workerEnv is the environment of a worker process: credentials and region
// only, so nothing from the caller's environment redirects it.
func workerEnv(accessKey, secretKey, region string) []string {
	env := []string{"AWS_ACCESS_KEY_ID=" + accessKey, "AWS_SECRET_ACCESS_KEY=" + secretKey, "AWS_REGION=" + region,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
