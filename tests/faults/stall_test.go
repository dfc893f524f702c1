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

	"github.com/s3zip/s3zip/internal/s3rate"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// stallTimeouts are the production timeouts, shortened so that a scenario
// takes seconds.
var stallTimeouts = s3rate.Timeouts{Connect: 2 * time.Second, Header: 3 * time.Second, IdleBody: time.Second}

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
			budget := baseTook + time.Duration(stalls)*2*stallTimeouts.IdleBody + 2*time.Second
			note := fmt.Sprintf("%d stalls; %.1f s, %.1f s without stalls, budget %.1f s", stalls, took.Seconds(), baseTook.Seconds(), budget.Seconds())
			w.judgeTimed(t, started, p, o, "archive, each stall costing at most 2 idle timeouts", note, stalls > 0 && took <= budget)
		})
	}
}
