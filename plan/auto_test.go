package plan

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
)

// sweepSizes are the data sets auto is checked over: the challenge set
// (objects of ~5 MB) and the small one (~4 KiB logs) from hundreds of
// objects to S3's largest object. The long ones run in make test-long and
// make test-load (S3ZIP_LONG=1; S3ZIP_SWEEP=all adds the largest).
var sweepSizes = []struct {
	set   string
	count int
	tier  int // 0: make test, 1: S3ZIP_LONG=1, 2: S3ZIP_SWEEP=all too
}{
	{"challenge", 300, 0}, {"challenge", 3000, 0}, {"challenge", 15000, 0}, {"small", 10000, 0},
	{"challenge", 100000, 1}, {"challenge", 1000000, 1}, {"small", 1000000, 1},
	{"challenge", 1500000, 2}, {"challenge", 2000000, 2}, {"small", 10000000, 2},
}

// sweepTier is how far the sweep goes in this run.
func sweepTier() int {
	switch {
	case os.Getenv("S3ZIP_SWEEP") == "all":
		return 2
	case os.Getenv("S3ZIP_LONG") == "1":
		return 1
	}
	return 0
}

// TestAutoIsTheFastestPlanAtEverySize prices auto's plans against every
// fixed strategy's, each at the rates S3 serves its prefixes (S3Rates):
// preferring time, auto is within 1.05× of the fastest fixed strategy;
// preferring cost, never dearer than the cheapest plan within its time
// bound (CostPreferenceSlack × the time preferred); every prediction is
// at least the least time S3's rates allow the plan's requests. From
// 100,000 objects up at 100 workers or more, auto's plan copies at most 3×
// the archive server-side and writes at most 3 requests per source
// object, so its work grows with the archive, not faster. (At 1 and 10
// workers chains are 7–17× faster than streaming there, and auto takes
// them: docs/strategies.md.)
func TestAutoIsTheFastestPlanAtEverySize(t *testing.T) {
	tier := sweepTier()
	for _, size := range sweepSizes {
		if size.tier > tier {
			continue
		}
		// One data set at a time in memory, its worker counts side by side.
		t.Run(fmt.Sprintf("%s-%d", size.set, size.count), func(t *testing.T) {
			entries, _ := Synthetic(size.set, size.count, 1)
			for _, workers := range []int{1, 10, 100, 1000} {
				t.Run(fmt.Sprintf("workers-%d", workers), func(t *testing.T) {
					t.Parallel()
					sweepOne(t, entries, workers, size.count >= 100000 && workers >= 100)
				})
			}
		})
	}
}

// sweepOne checks auto against the fixed strategies over entries.
func sweepOne(t *testing.T, entries []Entry, workers int, large bool) {
	t.Helper()
	type priced struct {
		name string
		pred Prediction
	}
	price := func(name string, opts Options) (priced, bool) {
		opts.Workers = workers
		p, err := Make(entries, opts)
		var le *failure.LimitError
		if errors.As(err, &le) && opts.Strategy != StrategyAuto {
			return priced{}, false // this layout does not fit S3's limits
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st := p.Stats()
		pred := p.Predict(DefaultModel)
		if floor := rateFloor(st); pred.Seconds < floor {
			t.Errorf("%s predicted %.1f s, under the %.1f s S3's rates allow its requests", name, pred.Seconds, floor)
		}
		if large && opts.Strategy == StrategyAuto {
			if copies := float64(st.ServerCopiedBytes) / float64(st.ArchiveBytes); copies > 3 {
				t.Errorf("%s copies %.2f× the archive server-side, over 3×", name, copies)
			}
			r := st.Requests
			if writes := float64(r.UploadPart+r.UploadPartCopy+r.Create+r.Complete+r.Delete) / float64(len(entries)); writes > 3 {
				t.Errorf("%s makes %.2f write requests per source object, over 3", name, writes)
			}
		}
		return priced{name, pred}, true
	}
	var fixed []priced
	for _, s := range []Strategy{StrategyStream, StrategyDuo, StrategyChain} {
		if p, ok := price(string(s), Options{Strategy: s}); ok {
			fixed = append(fixed, p)
		}
	}
	if len(fixed) == 0 {
		t.Fatal("no fixed strategy fits")
	}
	byTime, _ := price("auto", Options{Strategy: StrategyAuto})
	byCost, _ := price("auto --prefer cost", Options{Strategy: StrategyAuto, Prefer: PreferCost})
	fastest := fixed[0]
	for _, f := range fixed {
		if f.pred.Seconds < fastest.pred.Seconds {
			fastest = f
		}
	}
	t.Logf("auto %.1f s $%.4f, prefer cost %.1f s $%.4f; fastest fixed %s %.1f s $%.4f",
		byTime.pred.Seconds, byTime.pred.Dollars, byCost.pred.Seconds, byCost.pred.Dollars, fastest.name, fastest.pred.Seconds, fastest.pred.Dollars)
	if byTime.pred.Seconds > 1.05*fastest.pred.Seconds {
		t.Errorf("auto predicted %.1f s, over 1.05× %s's %.1f s", byTime.pred.Seconds, fastest.name, fastest.pred.Seconds)
	}
	bound := CostPreferenceSlack * byTime.pred.Seconds
	for _, f := range append(fixed, byTime) {
		if f.pred.Seconds <= bound && byCost.pred.Dollars > f.pred.Dollars*1.0001 {
			t.Errorf("auto --prefer cost predicted $%.4f (%.1f s), dearer than %s's $%.4f (%.1f s, within its bound of %.1f s)",
				byCost.pred.Dollars, byCost.pred.Seconds, f.name, f.pred.Dollars, f.pred.Seconds, bound)
		}
	}
}

// rateFloor is the least time S3's rates allow a plan's requests, less a
// second's burst, counted from its stats alone: the archive's writes (its
// parts, create and complete: one key), the work area's (every other
// UploadPart, UploadPartCopy, create, complete and delete: one new
// keyspace), each at 3,500 a second, and the sources' reads (GET, HEAD,
// the copies of sources) at 5,500.
func rateFloor(s Stats) float64 {
	r := s.Requests
	archive := s.Parts + 2
	work := r.UploadPart + r.UploadPartCopy + r.Create + r.Complete + r.Delete - archive
	reads := r.Get + r.Head + r.UploadPartCopy - s.ChainRounds - s.ChainParts
	return max(float64(archive)/3500, float64(work)/3500, float64(reads)/5500) - 1
}
