package load_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/s3zip/s3zip/plan"
	"github.com/s3zip/s3zip/workflow"
)

// TestLoadPlanPastMillion: the challenge set (5 MiB objects) and the
// small set (~4 KiB logs) at 1.5 M and 3 M entries, where chain and auto
// panicked (a part's bounds overflowed int64), plans or is refused with a
// LimitError naming the limit; a plan made is valid.
func TestLoadPlanPastMillion(t *testing.T) {
	long(t)
	for _, set := range []string{"challenge", "small"} {
		for _, count := range []int{1_500_000, 3_000_000} {
			entries, _ := plan.Synthetic(set, count, 1)
			for _, s := range []plan.Strategy{plan.StrategyChain, plan.StrategyAuto} {
				planOrRefuse(t, fmt.Sprintf("%s-%s-%d", set, s, count), entries, s)
				runtime.GC()
			}
		}
	}
}

// planOrRefuse plans entries with s as the deployment would and wants a
// valid plan or a LimitError.
func planOrRefuse(t *testing.T, name string, entries []plan.Entry, s plan.Strategy) {
	t.Run(name, func(t *testing.T) {
		t0 := time.Now()
		p, err := plan.Make(entries, plan.Options{Strategy: s, Workers: 100, PartsPerBatch: workflow.DefaultPartsPerBatch})
		var limit *plan.LimitError
		switch {
		case errors.As(err, &limit):
			t.Logf("refused in %s: %v", time.Since(t0).Round(time.Millisecond), err)
		case err != nil:
			t.Fatalf("plan: %v (want a plan or a LimitError)", err)
		default:
			if err := p.Validate(); err != nil {
				t.Fatalf("plan of %d entries is invalid: %v", len(entries), err)
			}
			st := p.Stats()
			t.Logf("planned in %s: %d parts, %d bytes", time.Since(t0).Round(time.Millisecond), st.Parts, st.ArchiveBytes)
		}
	})
}
