// Package partwork is the arithmetic of an archive part's bytes: where they
// come from (Segments), which CRC-32s a worker must learn before it pipes
// them (CRCProbes, SplitCRCProbes, Piped), and the rounds a chain part is
// built in (ChainRounds). The planner prices parts with it and the worker
// builds them with it, so the two agree on every request.
//
// It is pure and reads entries only through Placed: it knows the layout's
// offsets, not the plan's types.
package partwork

import (
	"fmt"
	"slices"
	"sort"
)

// S3's multipart limits, as plan.MinPartSize and plan.MaxPartSize (plan
// imports this package; a test holds them equal).
const (
	minPartSize = 5 << 20
	maxPartSize = 5 << 30
)

// Placed is a placed entry as the arithmetic reads it: Span is where its
// local header starts, where its data starts, and the offset just past its
// data.
type Placed[E any] interface {
	*E
	Span() (offset, dataOffset, end int64)
}

// dataSize is the length of e's data.
func dataSize[E any, P Placed[E]](e *E) int64 {
	_, data, end := P(e).Span()
	return end - data
}

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
func Segments[E any, P Placed[E]](entries []E, directoryOffset, start, end int64) []Segment {
	return AppendSegments[E, P](nil, entries, directoryOffset, start, end)
}

// AppendSegments is Segments appended to segs: pricing a plan lists every
// part's segments into one slice reused part after part.
func AppendSegments[E any, P Placed[E]](segs []Segment, entries []E, directoryOffset, start, end int64) []Segment {
	k := sort.Search(len(entries), func(i int) bool { _, _, e := P(&entries[i]).Span(); return e > start })
	last := k + sort.Search(len(entries)-k, func(i int) bool { o, _, _ := P(&entries[k+i]).Span(); return o >= end })
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
		offset, data, stop := P(&entries[k]).Span()
		clip(SegmentHeader, k, offset, offset, data)
		clip(SegmentData, k, data, data, stop)
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
// every range short of an entry's whole data, and an entry's whole data when
// need says so (its CRC-32 is not known, or the job copies the entry's rest
// after the part: the header carries the whole entry's CRC-32, combined from
// both).
func CRCProbes[E any, P Placed[E]](entries []E, segs []Segment, need func(P) bool) []int {
	return AppendCRCProbes(nil, entries, segs, need)
}

// AppendCRCProbes is CRCProbes appended to out.
func AppendCRCProbes[E any, P Placed[E]](out []int, entries []E, segs []Segment, need func(P) bool) []int {
	for i, s := range segs {
		if s.Kind != SegmentData {
			continue
		}
		e := &entries[s.Entry]
		if s.From == 0 && s.To == dataSize[E, P](e) && !need(e) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// WholeData says whether a data segment is its entry's whole data, whose
// CRC-32 is the one S3 may store for the source object: a worker HEADs it
// (a GET-class request) before it probes with a copy (a PUT-class one).
func WholeData[E any, P Placed[E]](entries []E, s Segment) bool {
	return s.Kind == SegmentData && s.From == 0 && s.To == dataSize[E, P](&entries[s.Entry])
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
func SplitCRCProbes[E any, P Placed[E]](entries []E, segs []Segment, need []int) (probe, read []int) {
	return AppendSplitCRCProbes[E, P](nil, nil, entries, segs, need)
}

// AppendSplitCRCProbes is SplitCRCProbes appended to probe and read.
func AppendSplitCRCProbes[E any, P Placed[E]](probe, read []int, entries []E, segs []Segment, need []int) ([]int, []int) {
	for _, i := range need {
		s := segs[i]
		if _, copyable := CopyRange(s.From, s.To, dataSize[E, P](&entries[s.Entry])); s.To-s.From < MinCRCProbe || !copyable {
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
// 5 MB"), so a part of a source of 5 MiB or less cannot be copied: ok is
// false, and its bytes must be read instead.
func CopyRange(from, to, size int64) (rng string, ok bool) {
	switch {
	case from == 0 && to == size:
		return "", true
	case size <= minPartSize:
		return "", false
	}
	return fmt.Sprintf("bytes=%d-%d", from, to-1), true
}
