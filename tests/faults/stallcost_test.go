package faults_test

// What stalls cost a whole run: many small objects through S3's request
// rates scaled to 200 GET/s and 100 other requests a second, created (and
// the archive extracted) on a clean day and on a day when six object GETs
// stall after their first KiB, with the timeouts the CLI and the Lambdas
// run with (s3rate's defaults). Each stall is detected by the GET's
// idle-read timeout and the read resumed from the byte it reached while
// the run's other reads go on, so the stalled run takes about as long as
// the clean one. A measurement, not part of make test: S3ZIP_LONG=1
// (make test-stalls).

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3rate"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// stallCostRates are S3's per-prefix rates scaled to 200 GET/HEAD and 100
// other requests a second.
var stallCostRates = fp.Rates{Read: 200, Write: 100}

// stallCostRule stalls six object GETs among the first few thousand of a
// create's (the planner's reads, the parts').
func stallCostRule(objects int) fp.Rule {
	return fp.Rule{Ops: []fp.Op{fp.GetObject}, Faults: []fp.Fault{fp.Stall}, Rate: 8 / float64(objects), Limit: 6}
}

// extractStallRule stalls six of an extraction's GETs (its plan's reads,
// and ranges of the archive of many entries each).
var extractStallRule = fp.Rule{Ops: []fp.Op{fp.GetObject}, Faults: []fp.Fault{fp.Stall}, Rate: 0.2, Limit: 6}

// rated is a proxy serving stallCostRates with rules, and the workflow's
// client through it configured as production configures it.
func (w *world) rated(t *testing.T, rules ...fp.Rule) (*fp.Proxy, *s3.Client) {
	t.Helper()
	rates := stallCostRates
	p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: 42, Rules: rules, Hold: 5 * time.Minute, SourceSize: w.srv.ObjectSize, Rates: &rates})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := w.srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		s3rate.Options(s3rate.Config{Limits: &s3rate.Limits{}})(o)
	})
	return p, c
}

// TestStallCost creates an archive of S3ZIP_STALL_OBJECTS small objects
// (default 20,000) and extracts it, each clean and with six stalled GETs,
// and prints the times; the stalled runs must take at most 1.2 times the
// clean ones, every entry right. About 2×125 s for create and 2×230 s for
// extract at 20,000 on two cores.
func TestStallCost(t *testing.T) {
	if os.Getenv("S3ZIP_LONG") != "1" {
		t.Skip("a measurement of minutes: S3ZIP_LONG=1 (make test-stalls)")
	}
	n := envInt(t, "S3ZIP_STALL_OBJECTS", 20_000)
	w := newWorld(t)
	w.putSmall(t, "s/", n)
	runner := func(c create.S3) *create.Runner {
		// The CLI's: its default --workers, batches cut by the plan.
		return &create.Runner{S3: c, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 8}, Log: quiet}
	}
	took := map[string]time.Duration{}
	for _, day := range []string{"clean", "stalled"} {
		var rules []fp.Rule
		if day == "stalled" {
			rules = append(rules, stallCostRule(n))
		}
		p, c := w.rated(t, rules...)
		dest := "out/stall-cost-" + day + ".zip"
		start := time.Now()
		_, err := runner(c).Run(context.Background(), throttledRequest("auto", "", dest), "stall-cost-"+day)
		took["create "+day] = time.Since(start)
		t.Logf("create, %s: %.1f s, %s", day, took["create "+day].Seconds(), p.Summary())
		if err != nil {
			t.Fatalf("create, %s: %v", day, err)
		}
		if msg, err := w.verify(t, dest, w.wants("s/")); err != nil {
			t.Fatalf("create, %s: %v", day, err)
		} else {
			t.Logf("create, %s: %s", day, msg)
		}
	}
	for _, day := range []string{"clean", "stalled"} {
		var rules []fp.Rule
		if day == "stalled" {
			rules = append(rules, extractStallRule)
		}
		p, c := w.rated(t, rules...)
		prefix := "x/" + day + "/"
		req := extract.Request{Bucket: "dst", Key: "out/stall-cost-clean.zip", DestBucket: "dst", Prefix: prefix, Workers: 8, WorkBucket: "work"}
		start := time.Now()
		_, err := extract.Run(context.Background(), c, req, nil)
		took["extract "+day] = time.Since(start)
		t.Logf("extract, %s: %.1f s, %s", day, took["extract "+day].Seconds(), p.Summary())
		if err != nil {
			t.Fatalf("extract, %s: %v", day, err)
		}
		w.sameObjects(t, prefix, "s/")
	}
	for _, what := range []string{"create", "extract"} {
		clean, stalled := took[what+" clean"], took[what+" stalled"]
		ratio := stalled.Seconds() / clean.Seconds()
		t.Logf("%s of %d objects at %.0f GET/s and %.0f other requests a second: %.1f s clean, %.1f s with 6 stalled GETs (%.2f×; idle-read timeout %v)",
			what, n, stallCostRates.Read, stallCostRates.Write, clean.Seconds(), stalled.Seconds(), ratio, s3rate.DefaultTimeouts.IdleRead)
		if ratio > 1.2 {
			t.Errorf("%s: the stalled run took %.2f× the clean one, want at most 1.2×", what, ratio)
		}
	}
}

// sameObjects checks that the objects under prefix in dst (but the
// extraction's report) are the sources under src, by name and MD5 (the
// ETag of an object put whole).
func (w *world) sameObjects(t *testing.T, prefix, src string) {
	t.Helper()
	got := map[string]string{}
	pages := s3.NewListObjectsV2Paginator(w.direct, &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if name := strings.TrimPrefix(aws.ToString(o.Key), prefix); name != extract.ReportName {
				got[name] = strings.Trim(aws.ToString(o.ETag), `"`)
			}
		}
	}
	want := 0
	for k, b := range w.src {
		name, ok := strings.CutPrefix(k, src)
		if !ok {
			continue
		}
		want++
		sum := md5.Sum(b)
		if got[name] != hex.EncodeToString(sum[:]) {
			t.Fatalf("s3://dst/%s%s: ETag %q, want the MD5 of the source s3://src/%s", prefix, name, got[name], k)
		}
	}
	if len(got) != want {
		var extra []string
		for name := range got {
			if _, ok := w.src[src+name]; !ok {
				extra = append(extra, name)
			}
		}
		t.Fatalf("%d objects under s3://dst/%s, want %d; not sources: %v", len(got), prefix, want, extra[:min(len(extra), 5)])
	}
	t.Logf("%d objects under s3://dst/%s, each the source's bytes", want, prefix)
}
