package partwork

import (
	"slices"
	"testing"
)

// entry is a placed entry as a test lays it out: a header of header bytes
// at offset, then size bytes of data.
type entry struct{ offset, header, size int64 }

func (e *entry) Span() (offset, dataOffset, end int64) {
	return e.offset, e.offset + e.header, e.offset + e.header + e.size
}

// lay places entries of these header and data sizes back to back from 0.
func lay(sizes ...[2]int64) []entry {
	var out []entry
	var at int64
	for _, s := range sizes {
		out = append(out, entry{offset: at, header: s[0], size: s[1]})
		at += s[0] + s[1]
	}
	return out
}

// Segments cuts a range into header, data and directory runs, each
// relative to its own start, and skips entries outside the range.
func TestSegmentsClipsToTheRange(t *testing.T) {
	entries := lay([2]int64{30, 100}, [2]int64{40, 0}, [2]int64{30, 200})
	dir := int64(30 + 100 + 40 + 30 + 200)
	got := Segments(entries, dir, 50, dir+10)
	want := []Segment{
		{SegmentData, 0, 20, 100},
		{SegmentHeader, 1, 0, 40},
		{SegmentHeader, 2, 0, 30},
		{SegmentData, 2, 0, 200},
		{SegmentDirectory, -1, 0, 10},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Segments = %v, want %v", got, want)
	}
}

// A part's whole-data segments need a probe only when need says so; a
// range short of an entry's data always does. Ranges under MinCRCProbe,
// and ranges of sources S3 copies only whole, are read ahead; the part is
// piped while that fits MaxReadAhead.
func TestCRCProbesSplitIntoProbesAndReads(t *testing.T) {
	const mib = 1 << 20
	entries := lay([2]int64{30, 8 * mib}, [2]int64{30, 100}, [2]int64{30, 4 * mib}, [2]int64{30, 8 * mib})
	_, _, end := entries[3].Span()
	segs := Segments(entries, end, 30+mib, end-mib) // the first and last entries cut
	known := func(e *entry) bool { return e != &entries[2] }
	need := CRCProbes(entries, segs, func(e *entry) bool { return !known(e) })
	var kinds []string
	for _, i := range need {
		s := segs[i]
		kinds = append(kinds, map[bool]string{true: "whole", false: "range"}[WholeData(entries, s)])
	}
	if want := []string{"range", "whole", "range"}; !slices.Equal(kinds, want) {
		t.Fatalf("CRCProbes: %v, want %v", kinds, want)
	}
	probe, read := SplitCRCProbes(entries, segs, need)
	if len(probe) != 3 || len(read) != 0 || !Piped(segs, probe, read) {
		t.Errorf("SplitCRCProbes: probe %v, read %v", probe, read)
	}
	small := lay([2]int64{30, 100}, [2]int64{30, MinCRCProbe})
	_, _, end = small[1].Span()
	segs = Segments(small, end, 0, end-1)
	probe, read = SplitCRCProbes(small, segs, CRCProbes(small, segs, func(*entry) bool { return true }))
	if len(probe) != 0 || len(read) != 2 || !Piped(segs, probe, read) {
		t.Errorf("small ranges: probe %v, read %v", probe, read)
	}
}

// S3 copies a range only of a source over 5 MiB; the whole of any source.
func TestCopyRange(t *testing.T) {
	cases := []struct {
		from, to, size int64
		rng            string
		ok             bool
	}{
		{0, 100, 100, "", true},
		{0, 50, 100, "", false},
		{0, 50, minPartSize, "", false},
		{10, 20, minPartSize + 1, "bytes=10-19", true},
	}
	for _, c := range cases {
		if rng, ok := CopyRange(c.from, c.to, c.size); rng != c.rng || ok != c.ok {
			t.Errorf("CopyRange(%d, %d, %d) = %q, %v; want %q, %v", c.from, c.to, c.size, rng, ok, c.rng, c.ok)
		}
	}
}
