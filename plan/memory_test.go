package plan

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// totalAllocated is every byte allocated so far.
func totalAllocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// What planning costs per entry, the input aside: a plan keeps a placed
// entry in 32 bytes and points into the input (it used to copy every
// entry, ~200 bytes, into each plan auto built); checking names takes no
// map from name to entry (two of them, and a slice of path segments a name,
// ~200 bytes an entry, were the largest allocation at millions). At ten
// million entries each byte here is 10 MB of the planner Lambda's 2,048.
func TestPlanMemoryPerEntry(t *testing.T) {
	const n = 200_000
	entries := small(n, 5)
	base := heapAfterGC()
	before := totalAllocated()
	if err := checkEntries(entries); err != nil {
		t.Fatal(err)
	}
	perEntry := float64(totalAllocated()-before) / n
	t.Logf("checking names: %.0f bytes allocated an entry", perEntry)
	if perEntry > 80 {
		t.Errorf("checking %d names allocated %.0f bytes an entry, want at most 80", n, perEntry)
	}
	for _, s := range strategies {
		p, err := Make(entries, Options{Strategy: s, Workers: 100, PartsPerBatch: 8})
		if err != nil {
			t.Fatal(err)
		}
		perEntry := float64(heapAfterGC()-base) / n
		t.Logf("%s: %.0f bytes kept an entry", s, perEntry)
		if perEntry > 48 {
			t.Errorf("%s: the plan keeps %.0f bytes an entry besides its input, want at most 48", s, perEntry)
		}
		runtime.KeepAlive(p)
	}
	runtime.KeepAlive(entries)
}

// Plans share the caller's entries, so what Make knows only for a plan
// stays out of them: an empty object's CRC-32 is 0 in the plan, and still
// unknown in the input.
func TestMakeLeavesInputEntries(t *testing.T) {
	entries := goldenEntries()
	for i := range entries {
		entries[i].CRC32 = CRC{}
	}
	for _, s := range strategies {
		p := mustPlan(t, entries, Options{Strategy: s, Workers: 2})
		for i := range p.Entries {
			if e := &p.Entries[i]; e.Size == 0 && e.CRC32 != KnownCRC(0) {
				t.Errorf("%s: plan's empty entry %q has CRC %v, want 00000000", s, e.Name, e.CRC32)
			}
		}
		for _, e := range entries {
			if e.CRC32.Known {
				t.Errorf("%s: Make set the input entry %q's CRC to %v", s, e.Name, e.CRC32)
			}
		}
	}
}

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
