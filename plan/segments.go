package plan

import (
	"fmt"
	"slices"
	"sort"
)

// SegmentKind says where a segment's bytes come from.
type SegmentKind uint8

const (
	// SegmentHeader bytes are (part of) an entry's local header.
	SegmentHeader SegmentKind = iota
	// SegmentData bytes are (a range of) an entry's source object.
	SegmentData
	// SegmentDirectory bytes are (part of) the central directory and end records.
	SegmentDirectory
)

// Segment is a run of a part's bytes from one place. From and To are
// offsets within the header, the source object or the directory.
type Segment struct {
	Kind     SegmentKind
	Entry    int // position in the entries slice given to Segments
	From, To int64
}

// Segments lists, in order, where the archive bytes [start, end) come from.
// entries must be consecutive placed entries covering the range (a part's
// First..First+Count-1 are enough); directoryOffset is where the central
// directory starts.
func Segments(entries []PlacedEntry, directoryOffset, start, end int64) []Segment {
	return appendSegments(nil, entries, directoryOffset, start, end)
}

// appendSegments is Segments appended to segs: pricing a plan lists every
// part's segments into one slice reused part after part (partsStats).
func appendSegments(segs []Segment, entries []PlacedEntry, directoryOffset, start, end int64) []Segment {
	k := sort.Search(len(entries), func(i int) bool { return entries[i].End() > start })
	last := k + sort.Search(len(entries)-k, func(i int) bool { return entries[k+i].Offset >= end })
	// A header and data an entry, and the directory: sized once, as a
	// part of thousands of small entries is listed for every plan priced.
	segs = slices.Grow(segs, 2*(last-k)+1)
	clip := func(kind SegmentKind, entry int, base, from, to int64) {
		from, to = max(from, start), min(to, end)
		if from < to {
			segs = append(segs, Segment{Kind: kind, Entry: entry, From: from - base, To: to - base})
		}
	}
	for ; k < last; k++ {
		e := &entries[k]
		clip(SegmentHeader, k, e.Offset, e.Offset, e.DataOffset())
		clip(SegmentData, k, e.DataOffset(), e.DataOffset(), e.End())
	}
	if end > directoryOffset {
		clip(SegmentDirectory, -1, directoryOffset, directoryOffset, end)
	}
	return segs
}

// MaxCRCProbes bounds the copies a worker makes to learn the CRC-32s of a
// part's data before it pipes the part (CRCProbes): one round of requests.
// A part with more (many tiny entries) is assembled in memory instead,
// where reading it gives the CRCs.
const MaxCRCProbes = 8

// CRCProbes lists the data segments of an upload part (indexes into segs)
// whose CRC-32 a worker must learn before it can send the part in one pass:
// every one but an entry's whole data whose CRC-32 is known. hasTail says
// whether an entry's rest is copied by the job (its start's CRC-32 is still
// needed: the header carries the whole entry's, combined from both).
func CRCProbes(entries []PlacedEntry, segs []Segment, hasTail func(*PlacedEntry) bool) []int {
	return appendCRCProbes(nil, entries, segs, hasTail)
}

// appendCRCProbes is CRCProbes appended to out.
func appendCRCProbes(out []int, entries []PlacedEntry, segs []Segment, hasTail func(*PlacedEntry) bool) []int {
	for i, s := range segs {
		if s.Kind != SegmentData {
			continue
		}
		e := &entries[s.Entry]
		if s.From == 0 && s.To == e.Size && e.CRC32.Known && !hasTail(e) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// WholeData says whether a data segment is its entry's whole data, whose
// CRC-32 is the one S3 may store for the source object: a worker HEADs it
// (a GET-class request) before it probes with a copy (a PUT-class one).
func WholeData(entries []PlacedEntry, s Segment) bool {
	return s.Kind == SegmentData && s.From == 0 && s.To == entries[s.Entry].Size
}

// MinCRCProbe is the smallest range worth a probe: a copy request to learn
// the CRC-32 of less than this costs more than reading it, so a worker reads
// such a range ahead (its GET, which the part needs anyway, made before the
// upload starts; the bytes held and sent from memory).
const MinCRCProbe = 256 << 10

// MaxReadAhead bounds the bytes a worker reads ahead to pipe a part: what
// it holds per part in flight.
const MaxReadAhead = 1 << 20

// SplitCRCProbes divides the segments whose CRC-32 a worker must learn
// (CRCProbes) into those it probes with a copy and those it reads ahead:
// under MinCRCProbe, or a range S3 cannot copy (CopyRange).
func SplitCRCProbes(entries []PlacedEntry, segs []Segment, need []int) (probe, read []int) {
	return splitCRCProbes(nil, nil, entries, segs, need)
}

// splitCRCProbes is SplitCRCProbes appended to probe and read.
func splitCRCProbes(probe, read []int, entries []PlacedEntry, segs []Segment, need []int) ([]int, []int) {
	for _, i := range need {
		s := segs[i]
		if _, copyable := CopyRange(s.From, s.To, entries[s.Entry].Size); s.To-s.From < MinCRCProbe || !copyable {
			read = append(read, i)
		} else {
			probe = append(probe, i)
		}
	}
	return probe, read
}

// Piped says whether a part whose data needs these probes and reads ahead
// (SplitCRCProbes: indexes into segs) is sent in one pass (GETs piped into
// UploadPart) rather than assembled first: a few probes, and small ranges
// that together fit MaxReadAhead. A part of many small entries is
// assembled: read ahead, it would be all of it.
func Piped(segs []Segment, probe, read []int) bool {
	if len(probe) > MaxCRCProbes {
		return false
	}
	var ahead int64
	for _, i := range read {
		ahead += segs[i].To - segs[i].From
	}
	return ahead <= MaxReadAhead
}

// CopyRange is the x-amz-copy-source-range of an UploadPartCopy of the
// bytes [from, to) of a source of size bytes: "" for the whole source. S3
// copies a byte range only of a source larger than 5 MB (UploadPartCopy:
// "x-amz-copy-source-range … only if the source object is greater than
// 5 MB"), so a part of a source of MinPartSize or less cannot be copied:
// ok is false, and its bytes must be read instead.
func CopyRange(from, to, size int64) (rng string, ok bool) {
	switch {
	case from == 0 && to == size:
		return "", true
	case size <= MinPartSize:
		return "", false
	}
	return fmt.Sprintf("bytes=%d-%d", from, to-1), true
}
