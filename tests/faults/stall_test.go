package faults_test

// Stalls: a connection that sends a response's headers and first bytes and
// then nothing, held open. The workflow's clients, configured as the
// Lambdas' and the CLI's are (internal/s3rate: idle-body and header
// timeouts), abandon such a response and retry it; a stall costs seconds,
// never the function's timeout.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3rate"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// stallTimeouts are the production timeouts, shortened so that a scenario
// takes seconds.
var stallTimeouts = s3rate.Timeouts{Connect: 2 * time.Second, Header: 3 * time.Second, IdleBody: time.Second, IdleRead: time.Second}

// TestStalls stalls some object GETs (the workers' reads of sources) and the
// finalizer's CompleteMultipartUpload: each run completes, right, and
// spends at most twice the stall timeout on each stall (over a run of the
// same objects without stalls).
func TestStalls(t *testing.T) {
	w := newWorld(t)
	w.putSmall(t, "s/", 200)
	run := func(t *testing.T, name string, rules ...fp.Rule) (*fp.Proxy, outcome, time.Duration) {
		p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: 3, Rules: rules, Hold: 60 * time.Second, SourceSize: w.srv.ObjectSize})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		c := w.srv.Client(t, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			s3rate.Options(s3rate.Config{Limits: &s3rate.Limits{}, MaxBackoff: 500 * time.Millisecond, Timeouts: stallTimeouts})(o)
		})
		dest := "out/stall-" + name + ".zip"
		start := time.Now()
		_, err = w.runner(c).Run(context.Background(), throttledRequest("stream", "", dest), "stall-"+name)
		return p, outcome{err: err, dest: dest, want: w.wants("s/")}, time.Since(start)
	}
	_, base, baseTook := run(t, "none")
	if base.err != nil {
		t.Fatalf("the run without stalls failed: %v", base.err)
	}
	w.scrub(t)
	for _, c := range []struct {
		name string
		rule fp.Rule
	}{
		{"get-body", fp.Rule{Ops: []fp.Op{fp.GetObject}, Faults: []fp.Fault{fp.Stall}, Rate: 0.05, Limit: 4}},
		{"complete", fp.Rule{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.Stall}, Rate: 1, Limit: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := time.Now()
			p, o, took := run(t, c.name, c.rule)
			stalls, _ := p.Injected()
			budget := baseTook + time.Duration(stalls)*2*max(stallTimeouts.IdleBody, stallTimeouts.IdleRead) + 2*time.Second
			note := fmt.Sprintf("%d stalls; %.1f s, %.1f s without stalls, budget %.1f s", stalls, took.Seconds(), baseTook.Seconds(), budget.Seconds())
			w.judgeTimed(t, started, p, o, "archive, each stall costing at most 2 idle timeouts", note, stalls > 0 && took <= budget)
		})
	}
}

// TestStalledGetsOverlap stalls six object GETs of one run, with the
// timeouts production runs with (s3rate's defaults): each stalled read is
// abandoned after the idle-read timeout and resumed from the byte it
// reached while the part's other reads go on, so the six together cost
// about one timeout, not six one after another.
func TestStalledGetsOverlap(t *testing.T) {
	w := newWorld(t)
	w.putSmall(t, "s/", 300)
	run := func(name string, rules ...fp.Rule) (*fp.Proxy, outcome, time.Duration) {
		p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: 11, Rules: rules, Hold: 2 * time.Minute, SourceSize: w.srv.ObjectSize})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		c := w.srv.Client(t, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			s3rate.Options(s3rate.Config{Limits: &s3rate.Limits{}})(o)
		})
		dest := "out/overlap-" + name + ".zip"
		start := time.Now()
		_, err = w.runner(c).Run(context.Background(), throttledRequest("stream", "", dest), "overlap-"+name)
		return p, outcome{err: err, dest: dest, want: w.wants("s/")}, time.Since(start)
	}
	_, base, baseTook := run("none")
	if base.err != nil {
		t.Fatalf("the run without stalls failed: %v", base.err)
	}
	w.scrub(t)
	started := time.Now()
	p, o, took := run("six", fp.Rule{Ops: []fp.Op{fp.GetObject}, Faults: []fp.Fault{fp.Stall}, Rate: 0.05, Limit: 6})
	stalls, _ := p.Injected()
	idle := s3rate.DefaultTimeouts.IdleRead
	added := took - baseTook
	note := fmt.Sprintf("%d stalls added %.1f s (%.1f s against %.1f s; idle-read timeout %v, %v one after another)",
		stalls, added.Seconds(), took.Seconds(), baseTook.Seconds(), idle, time.Duration(stalls)*idle)
	w.judgeTimed(t, started, p, o, "archive, six stalls costing at most two idle-read timeouts together", note, stalls == 6 && added < 2*idle)
}

// TestExtractStalls stalls the extraction's first GETs (its plan's reads
// and ranges of the archive): each body is abandoned after the idle-read
// timeout and resumed from the byte it reached, and every object is
// written, byte for byte, within a few timeouts of the stalls.
func TestExtractStalls(t *testing.T) {
	w := newExtractWorld(t)
	started := time.Now()
	p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: 5, Rules: []fp.Rule{{Ops: []fp.Op{fp.GetObject}, Faults: []fp.Fault{fp.Stall}, Rate: 1, Limit: 3}},
		Hold: 60 * time.Second, SourceSize: w.srv.ObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := w.srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		s3rate.Options(s3rate.Config{Limits: &s3rate.Limits{}, MaxBackoff: 500 * time.Millisecond, Timeouts: stallTimeouts})(o)
	})
	prefix := "out/stalled/"
	_, err = extract.Run(context.Background(), c, extractRequest(prefix), nil)
	took := time.Since(started)
	if stalls, _ := p.Injected(); stalls != 3 || took > 3*2*stallTimeouts.IdleRead+10*time.Second {
		t.Errorf("%d stalls, %.1f s: want 3, each costing at most two idle-read timeouts (%v)", stalls, took.Seconds(), stallTimeouts.IdleRead)
	}
	w.judgeExtract(t, started, p, "objects", prefix, err)
}
