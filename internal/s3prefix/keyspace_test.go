package s3prefix

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestNumberingKeepsKeyOrder: keys numbered by their runes compare as S3
// lists them (UTF-8 byte order), whatever runes they use; a number turned
// back into a key is never above it.
func TestNumberingKeepsKeyOrder(t *testing.T) {
	runes := []rune("a/é日🙂-.0~Z ")
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, 400)
	for i := range keys {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		keys[i] = b.String()
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	abc := &alphabet{}
	width := 0
	for _, k := range keys {
		abc.add(k)
		width = max(width, utf8.RuneCountInString(k))
	}
	num := newNumbering(abc.runes(), width)
	for i := 1; i < len(keys); i++ {
		a, b := num.value(keys[i-1]), num.value(keys[i])
		if a.Cmp(b) >= 0 {
			t.Fatalf("%q < %q, but their numbers are %v and %v", keys[i-1], keys[i], a, b)
		}
	}
	for _, k := range keys {
		if back := num.suffix(num.value(k)); back != k {
			t.Fatalf("%q numbered and back is %q", k, back)
		}
	}
}

// TestCutsStayInsideTheRange: for every shape of range, the cut keys are
// in order, past the cursor, before the range's end, valid UTF-8 and under
// the prefix; where folders are known past the page in flight, the cuts
// are folders.
func TestCutsStayInsideTheRange(t *testing.T) {
	for _, tc := range []struct {
		name           string
		first, cursor  string
		upTo           string // "" unbounded
		folders        []string
		wantFolderCuts bool
	}{
		{name: "numbered, unbounded", first: "p/00000000", cursor: "p/00000999"},
		{name: "numbered, bounded", first: "p/00001000", cursor: "p/00001999", upTo: "p/00050000"},
		{name: "a folder ahead", first: "p/000/000000", cursor: "p/000/000999", upTo: "p/001/"},
		{name: "unicode", first: "p/é日0", cursor: "p/é日🙂", upTo: "p/🙂"},
		{name: "'/'-runs", first: "p/a//b", cursor: "p/a///c", upTo: "p/b"},
		{name: "folders known", first: "p/000/000000", cursor: "p/000/000999",
			folders: []string{"p/", "p/000/", "p/001/", "p/002/", "p/003/", "p/004/"}, wantFolderCuts: true},
		{name: "folders only behind", first: "p/009/000000", cursor: "p/009/000999",
			folders: []string{"p/000/", "p/001/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			abc := &alphabet{}
			abc.add(trimPrefix(tc.first, "p/"))
			abc.add(trimPrefix(tc.cursor, "p/"))
			s := spanSample{prefix: "p/", first: tc.first, cursor: tc.cursor, upTo: tc.upTo, bounded: tc.upTo != ""}
			p, ok := s.plan(abc)
			if !ok {
				t.Fatal("no plan for a range with keys ahead")
			}
			for _, n := range []int{1, 3, 15} {
				keys := p.cuts(s, tc.folders, n)
				if len(keys) == 0 || len(keys) > n {
					t.Fatalf("%d cuts asked for, %d given: %q", n, len(keys), keys)
				}
				last := tc.cursor
				for _, k := range keys {
					if k <= last || s.bounded && k >= tc.upTo || !utf8.ValidString(k) || !strings.HasPrefix(k, "p/") {
						t.Fatalf("cut %q (of %q): not past %q and before %q, or not a key under p/", k, keys, last, tc.upTo)
					}
					if tc.wantFolderCuts && !slices.Contains(tc.folders, k) {
						t.Fatalf("cut %q is not one of the folders %q ahead", k, tc.folders)
					}
					last = k
				}
			}
		})
	}
}

// TestPlanEstimatesWhatIsAhead: a bounded range's estimate is its pages
// still ahead, from the span of the page seen; nothing is ahead of a
// cursor at the range's end; an unbounded range's end is unknown.
func TestPlanEstimatesWhatIsAhead(t *testing.T) {
	abc := &alphabet{}
	abc.add("0123456789")
	s := spanSample{prefix: "p/", first: "p/00001000", cursor: "p/00001999", upTo: "p/00011000", bounded: true}
	p, ok := s.plan(abc)
	// 9 pages of keys; the numbering's base is 11 (ten digits and "the
	// key ended"), not 10, so it is an estimate.
	if !ok || p.ahead < 6 || p.ahead > 12 {
		t.Fatalf("ahead of p/00001999 up to p/00011000, pages of 1,000: %.1f pages (%v), want about 9", p.ahead, ok)
	}
	s.upTo = "p/00001999"
	if _, ok := s.plan(abc); ok {
		t.Fatal("a range whose cursor is at its end has a plan to cut it")
	}
	s.upTo, s.bounded = "", false
	if p, ok := s.plan(abc); !ok || p.ahead < 1e9 {
		t.Fatalf("unbounded: %.1f pages ahead (%v), want unknown (+Inf)", p.ahead, ok)
	}
}
