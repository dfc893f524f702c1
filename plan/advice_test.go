package plan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// tinyEntries are n objects of 0-2 KiB, issue 10's kind of set.
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
	}{
		{"tiny-objects/1-worker", tinyEntries(6000), 1, true},
		{"tiny-objects/8-workers", tinyEntries(6000), 8, true},
		{"challenge/1-worker", Challenge(3000, 1), 1, false},
		{"challenge/8-workers", Challenge(3000, 1), 8, false},
		{"challenge/100-workers", Challenge(3000, 1), 100, false},
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
			if a.Chain.Seconds < chainSlower*a.Auto.Seconds || a.LongestChain < len(c.entries) {
				t.Errorf("advice %+v: chain is not predicted %d× slower, or its longest part is not a round per entry", a, chainSlower)
			}
			msg := a.String()
			for _, want := range []string{fmt.Sprintf("%.1f s", a.Chain.Seconds), fmt.Sprintf("%.1f s", a.Auto.Seconds),
				fmt.Sprintf("$%.4f", a.Chain.Dollars), fmt.Sprintf("$%.4f", a.Auto.Dollars), "auto"} {
				if !strings.Contains(msg, want) {
					t.Errorf("advice %q does not say %q", msg, want)
				}
			}
		})
	}
}
