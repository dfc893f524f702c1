package plan

import (
	"fmt"
	"math"
	"testing"
)

// The model, fed the published designs' plans for the challenge set,
// reproduces their published wall times within 25% (reference article
// 000 and the challenge's results): one Lambda streaming everything
// (~212 s), one Lambda with server-side copies (Duo, 106 s), one Lambda with
// server-side append chains (~11 s), ~1,500 Lambdas streaming (~6 s).
func TestModelReproducesPublishedRecords(t *testing.T) {
	set := Challenge(3000, 1)
	mk := func(s Strategy, o Options) *Plan {
		o.Strategy = s
		return mustPlan(t, set, o)
	}
	stream1 := mk(StrategyStream, Options{})
	duo1 := mk(StrategyDuo, Options{})
	chain1 := mk(StrategyChain, Options{})
	stream1500 := mk(StrategyStream, Options{PartSize: 10 * MiB, Workers: 1500})
	cases := []struct {
		name      string
		p         *Plan
		run       Run
		published float64
	}{
		{"one-lambda-streaming", stream1, Run{Workers: 1}, 212},
		{"one-lambda-duo", duo1, Run{Workers: 1, HeadsUpFront: len(duo1.CRCsNeeded())}, 106},
		{"one-lambda-chains", chain1, Run{Workers: 1, HeadsUpFront: len(chain1.CRCsNeeded())}, 11},
		{"1500-lambdas-streaming", stream1500, Run{Workers: 1500, Orchestrated: true}, 6},
	}
	for _, c := range cases {
		pr := PipedModel.Predict(c.p.Stats(), c.run)
		off := pr.Seconds/c.published - 1
		t.Logf("%-24s predicted %6.1f s (worker %.1f, overhead %.1f), published %5.0f s: %+.0f%%, $%.4f", c.name, pr.Seconds, pr.WorkerSecs, pr.OverheadSecs, c.published, 100*off, pr.Dollars)
		if math.Abs(off) > 0.25 {
			t.Errorf("%s: predicted %.1f s, published %.0f s: off by %.0f%%", c.name, pr.Seconds, c.published, 100*off)
		}
	}
}

// Predictions for s3zip on the challenge set (printed; the numbers are in
// the README): auto at 1, 10, 100 and 1,000 workers.
func TestModelPredictsOurs(t *testing.T) {
	set := Challenge(3000, 1)
	for _, w := range []int{1, 10, 100, 1000} {
		for _, s := range []Strategy{StrategyAuto, StrategyDuo, StrategyChain} {
			p := mustPlan(t, set, Options{Strategy: s, Workers: w})
			st := p.Stats()
			pr := DefaultModel.Predict(st, Run{Workers: w, Orchestrated: true, HeadsUpFront: len(p.CRCsNeeded())})
			t.Logf("%5d workers %-6s %7.1f s  $%.4f  streamed %5.1f%%  chain parts %4d  requests %d", w, s, pr.Seconds, pr.Dollars, 100*st.StreamedFraction(), st.ChainParts, st.Requests.Total())
			if pr.Seconds <= 0 || pr.Dollars <= 0 {
				t.Fatalf("%s at %d workers: prediction %+v", s, w, pr)
			}
		}
	}
	fmt.Print()
}

// A worker reads and sends each streamed byte at once, so a server that
// serves and takes in streams side by side is bound by the slower of the
// two, not by their sum; and every byte a chain's rounds assemble again
// costs it CompletePerByte.
func TestModelServerShare(t *testing.T) {
	m := Model{WorkerBandwidth: 1e9, RequestLatency: 0.001, CopyRate: 1e9, Concurrency: 8,
		ServerIngestRate: 100e6, ServerGetRate: 200e6, CompletePerByte: 1e-9}
	s := Stats{StreamedBytes: 100e6, UploadParts: 20, Parts: 21, CopiedBytes: 50e6, ServerCopiedBytes: 250e6}
	if got, want := m.Predict(s, Run{Workers: 10}).ServerSecs, 1.0+0.2; math.Abs(got-want) > 1e-9 {
		t.Errorf("server share %.3f s, want %.3f (streamed at the slower 100 MB/s, and 200 MB assembled again at 1 s/GB)", got, want)
	}
}

// Told the batch size, auto times its candidates batch by batch as the
// Map runs them, so what it picks is, by that same measure, no slower than
// duo's plan (which it has among its candidates).
func TestAutoPricesBatchByBatch(t *testing.T) {
	set := Challenge(600, 1)
	for _, per := range []int{1, 8} {
		for _, w := range []int{1, 16, 100} {
			time := func(s Strategy) float64 {
				p := mustPlan(t, set, Options{Strategy: s, Workers: w, PartsPerBatch: per})
				return DefaultModel.Predict(p.Stats(), Run{Workers: w, Orchestrated: true, HeadsUpFront: len(p.CRCsNeeded()), Loads: p.Loads(per)}).Seconds
			}
			auto, duo := time(StrategyAuto), time(StrategyDuo)
			t.Logf("%d parts per batch, %3d workers: auto %.1f s, duo %.1f s", per, w, auto, duo)
			if auto > duo*1.001 {
				t.Errorf("%d parts per batch, %d workers: auto's plan takes %.2f s batch by batch, duo's %.2f s", per, w, auto, duo)
			}
		}
	}
}

// Listing is priced as the planner lists (s3prefix.Under.List): the first page
// alone, then ListConcurrency pages a round trip, no faster than one vCPU
// decodes them; not one page after another (10,000 round trips for 10 M
// keys, which priced a 10 M run at over 1,000 s of listing alone).
func TestListingPricedAsThePlannerLists(t *testing.T) {
	m := DefaultModel
	for _, c := range []struct {
		keys int
		want float64
	}{
		{0, 0},
		{1000, m.ListPageSeconds},                   // one page: one round trip
		{3000, 2 * m.ListPageSeconds},               // the first, then the rest at once
		{17_000, 2 * m.ListPageSeconds},             // 16 pages after the first, at once
		{10_000_000, 10_000 * m.ListPageCPUSeconds}, // decoding bounds it at 100 s (16 pages a round trip would take 62.6 s)
	} {
		if got := m.listSeconds(c.keys); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("listing %d keys: %.3f s, want %.3f s", c.keys, got, c.want)
		}
	}
}
