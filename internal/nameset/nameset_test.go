package nameset

import (
	"fmt"
	"strings"
	"testing"
)

// Equal names find the first entry of that name; other names and prefixes
// of names are not found, whatever their hashes share.
func TestSetFindsFirstOfEachName(t *testing.T) {
	names := make([]string, 0, 20_000)
	for i := range 10_000 {
		names = append(names, fmt.Sprintf("logs/host-%03d/%05d.log", i%100, i))
	}
	names = append(names, names[:10_000]...) // every name twice
	s := New(len(names), func(i int) string { return names[i] })
	for i := range names {
		got := s.Add(i)
		switch {
		case i < 10_000 && got != -1:
			t.Fatalf("Add(%d) %q: found %d, want it added", i, names[i], got)
		case i >= 10_000 && got != i-10_000:
			t.Fatalf("Add(%d) %q: found %d, want %d", i, names[i], got, i-10_000)
		}
	}
	if got := s.Find(names[123]); got != 123 {
		t.Errorf("Find(%q) = %d, want 123", names[123], got)
	}
	for _, missing := range []string{"", "logs/", strings.TrimSuffix(names[5], ".log"), names[5] + "x"} {
		if got := s.Find(missing); got != -1 {
			t.Errorf("Find(%q) = %d, want -1", missing, got)
		}
	}
}

// A set takes as many entries as it was made for, in 8 bytes a slot with a
// quarter of the slots free.
func TestSetSize(t *testing.T) {
	for _, n := range []int{0, 1, 6, 7, 1000, 1 << 20} {
		s := New(n, func(i int) string { return fmt.Sprint(i) })
		for i := range n {
			if s.Add(i) != -1 {
				t.Fatalf("n=%d: entry %d found before it was added", n, i)
			}
		}
		if len(s.slots)*3/4 < n || n > 8 && len(s.slots) > 3*n {
			t.Errorf("n=%d: %d slots", n, len(s.slots))
		}
	}
}
