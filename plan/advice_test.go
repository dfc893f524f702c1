package plan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// tinyEntries are n objects of 0-2 KiB: the set chain is the wrong tool for.
func tinyEntries(n int) []Entry {
	rng := rand.New(rand.NewPCG(1, 1))
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{Name: fmt.Sprintf("tiny/%05d", i), Source: Source{Bucket: "b", Key: fmt.Sprintf("tiny/%05d", i)}, Size: rng.Int64N(2049)}
	}
	return out
}

func TestAdviseChain(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []Entry
		workers int
		advice  bool
		why     string // what the advice says binds the chains
	}{
		{"tiny-objects/1-worker", tinyEntries(6000), 1, true, "chains pay for big objects when bandwidth is the limit"},
		{"tiny-objects/8-workers", tinyEntries(6000), 8, true, "chains pay for big objects when bandwidth is the limit"},
		{"challenge/1-worker", Challenge(3000, 1), 1, false, ""},
		{"challenge/8-workers", Challenge(3000, 1), 8, false, ""},
		// At 100 workers the chains' rounds are bound by the work area's
		// write rate (22,873 writes at 3,500 a second): duo's copies are
		// twice as fast.
		{"challenge/100-workers", Challenge(3000, 1), 100, true,
			"its rounds write the run's work area 22876 times, and S3 serves one new prefix 3500 writes a second (5.5 s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Strategy: StrategyChain, Workers: c.workers}
			p := mustPlan(t, c.entries, opts)
			a, err := AdviseChain(p, c.entries, opts)
			if err != nil {
				t.Fatal(err)
			}
			if (a != nil) != c.advice {
				t.Fatalf("advice %v, want advice: %v", a, c.advice)
			}
			if a == nil {
				return
			}
			t.Log(a)
			if a.Chain.Seconds < chainSlower*a.Auto.Seconds {
				t.Errorf("advice %+v: chain is not predicted %d× slower", a, chainSlower)
			}
			if rated := a.Rates.Binds == "work area"; !rated && a.LongestChain < len(c.entries) {
				t.Errorf("advice %+v: neither its longest part is a round per entry nor the work area's rate binds", a)
			}
			msg := a.String()
			for _, want := range []string{fmt.Sprintf("%.1f s", a.Chain.Seconds), fmt.Sprintf("%.1f s", a.Auto.Seconds),
				fmt.Sprintf("$%.4f", a.Chain.Dollars), fmt.Sprintf("$%.4f", a.Auto.Dollars), "auto", c.why} {
				if !strings.Contains(msg, want) {
					t.Errorf("advice %q does not say %q", msg, want)
				}
			}
		})
	}
}
