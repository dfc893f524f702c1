package plan

import (
	"fmt"
	"testing"
	"time"
)

// The synthetic sets keep their keys in one arena (internal/arena): a
// key is its bytes, not an allocation of its own, and is the key fmt made.
func TestSyntheticKeysInArena(t *testing.T) {
	const n = 10_000
	for _, set := range []string{"challenge", "small"} {
		allocs := testing.AllocsPerRun(1, func() { Synthetic(set, n, 1) })
		if allocs > n/100 {
			t.Errorf("%s: %d entries made %.0f allocations, want the entries' slice and a block of keys every MiB", set, n, allocs)
		}
	}
	for i, e := range small(2001, 1)[1998:] {
		i += 1998
		day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		want := fmt.Sprintf("logs/host-%03d/%04d/%02d/%02d/%08d.log", i%1000, day.Year(), day.Month(), day.Day(), i/1000)
		if e.Source.Key != want || e.Name != want[len("logs/"):] {
			t.Errorf("entry %d: key %q name %q, want key %q", i, e.Source.Key, e.Name, want)
		}
	}
}
