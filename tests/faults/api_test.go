// Fault scenarios: the workflow (the handlers the Lambdas run, driven by
// create.Runner the way the state machine drives them) against versitygw
// behind a fault-injecting proxy, and against workers, finalizers and
// planners that die half-way. Every scenario must end in a correct archive
// (all seven readers agree, contents match) or a clean failure (a typed
// error, no archive, no multipart upload, no work objects). The table of
// scenarios is printed at the end; run with S3ZIP_FAULTS=1 (make test-faults).
package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// Rates, from a fault now and then to most requests failing at least once.
const (
	occasional = 0.04
	moderate   = 0.12
	heavy      = 0.35
)

// runThroughProxy runs a whole archive with the workflow's S3 client behind
// the proxy and judges it.
func runThroughProxy(t *testing.T, w *world, seed uint64, strategy, expected string, rules ...fp.Rule) {
	started := time.Now()
	p, c := w.faults(t, seed, rules...)
	dest := "out/" + strings.ReplaceAll(t.Name(), "/", "-") + ".zip"
	_, err := w.runner(c).Run(context.Background(), request(strategy, "d/", dest, false), "faults-"+fmt.Sprint(seed))
	p.SetRules(nil) // the checks see the server as it is
	w.judge(t, started, p, expected, outcome{err: err, dest: dest, want: w.wants("d/")})
}

// TestEveryAPI fails the first two calls of each S3 operation the workflow
// makes (a 500, 503, timeout or reset, before or after the server acted):
// the SDK's retries and the workflow's own must absorb them.
func TestEveryAPI(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for i, op := range []fp.Op{fp.ListObjectsV2, fp.HeadObject, fp.GetObject, fp.PutObject, fp.CreateMultipartUpload,
		fp.UploadPart, fp.UploadPartCopy, fp.CompleteMultipartUpload, fp.DeleteObjects} {
		t.Run(string(op), func(t *testing.T) {
			runThroughProxy(t, w, uint64(100+i), "duo", wantArchive, fp.Rule{Ops: []fp.Op{op}, Faults: fp.AllFaults, Rate: 1, Limit: 2})
		})
	}
}

// TestRates injects each kind of fault into every operation at rates from
// occasional to heavy. Occasional faults must not fail a run; heavy ones
// may, cleanly.
func TestRates(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for _, c := range []struct {
		name     string
		faults   []fp.Fault
		rate     float64
		expected string
	}{
		{"500/occasional", []fp.Fault{fp.InternalError}, occasional, wantArchive},
		{"503-slowdown/occasional", []fp.Fault{fp.SlowDown}, occasional, wantArchive},
		{"timeout/occasional", []fp.Fault{fp.Timeout}, occasional, wantArchive},
		{"reset/occasional", []fp.Fault{fp.Reset}, occasional, wantArchive},
		{"reset-after/occasional", []fp.Fault{fp.ResetAfter}, occasional, wantArchive},
		{"mixed/moderate", fp.AllFaults, moderate, wantEither},
		{"500/heavy", []fp.Fault{fp.InternalError}, heavy, wantEither},
		{"503-slowdown/heavy", []fp.Fault{fp.SlowDown}, heavy, wantEither},
		{"timeout/heavy", []fp.Fault{fp.Timeout}, 0.2, wantEither}, // each costs the client's timeout
		{"reset/heavy", []fp.Fault{fp.Reset}, heavy, wantEither},
		{"reset-after/heavy", []fp.Fault{fp.ResetAfter}, heavy, wantEither},
		{"mixed/heavy", fp.AllFaults, heavy, wantEither},
	} {
		t.Run(c.name, func(t *testing.T) {
			runThroughProxy(t, w, 7, "duo", c.expected, fp.Rule{Faults: c.faults, Rate: c.rate})
		})
	}
	t.Run("stream/mixed/moderate", func(t *testing.T) {
		runThroughProxy(t, w, 8, "stream", wantEither, fp.Rule{Faults: fp.AllFaults, Rate: moderate})
	})
	// Chains keep many round uploads open at once (checksummed rounds are
	// started before any header is written): none may be left behind.
	t.Run("chain/mixed/occasional", func(t *testing.T) {
		runThroughProxy(t, w, 9, "chain", wantArchive, fp.Rule{Faults: fp.AllFaults, Rate: occasional})
	})
	t.Run("chain/mixed/moderate", func(t *testing.T) {
		runThroughProxy(t, w, 10, "chain", wantEither, fp.Rule{Faults: fp.AllFaults, Rate: moderate})
	})
	t.Run("chain/rounds/heavy", func(t *testing.T) {
		runThroughProxy(t, w, 11, "chain", wantEither, fp.Rule{Ops: []fp.Op{fp.CreateMultipartUpload, fp.UploadPart, fp.UploadPartCopy, fp.CompleteMultipartUpload},
			Faults: fp.AllFaults, Rate: heavy})
	})
}
