// Package partwork is the arithmetic of an archive part's bytes. Segments
// says where they come from, CRCProbes, SplitCRCProbes and Piped say which
// CRC-32s a worker must learn before it pipes them, and ChainRounds lists
// the rounds a chain part is built in. The planner prices parts with it and
// the worker builds them with it, so the two agree on every request.
//
// It is pure and reads entries only through Placed, so it knows the
// layout's offsets, not the plan's types.
package partwork

import (
	"fmt"
	"slices"
	"sort"
)

// S3's multipart limits. plan imports this package, so a test holds them
// equal to plan.MinPartSize and plan.MaxPartSize.
const (
	minPartSize = 5 << 20
	maxPartSize = 5 << 30
)

// Placed is a placed entry as the arithmetic reads it. Span returns where
// its local header starts, where its data starts, and the offset just past
// its data.
type Placed[E any] interface {
	*E
	Span() (offset, dataOffset, end int64)
}

// dataSize returns the length of e's data.
func dataSize[E any, P Placed[E]](e *E) int64 {
	_, data, end := P(e).Span()
	return end - data
}

// SegmentKind says where a segment's bytes come from.
type SegmentKind uint8

const (
	// SegmentHeader bytes are an entry's local header or part of it.
	SegmentHeader SegmentKind = iota
	// SegmentData bytes are an entry's source object or a range of it.
	SegmentData
	// SegmentDirectory bytes are the central directory and end records or part of them.
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
// entries must be consecutive placed entries covering the range, as a
// part's First..First+Count-1 are; directoryOffset is where the central
// directory starts.
func Segments[E any, P Placed[E]](entries []E, directoryOffset, start, end int64) []Segment {
	return AppendSegments[E, P](nil, entries, directoryOffset, start, end)
}

// AppendSegments appends Segments to segs, so that pricing a plan lists
// every part's segments into one slice reused part after part.
func AppendSegments[E any, P Placed[E]](segs []Segment, entries []E, directoryOffset, start, end int64) []Segment {
	k := sort.Search(len(entries), func(i int) bool { _, _, e := P(&entries[i]).Span(); return e > start })
	last := k + sort.Search(len(entries)-k, func(i int) bool { o, _, _ := P(&entries[k+i]).Span(); return o >= end })
	// A header and data an entry, and the directory, sized once, as a
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

// MaxCRCProbes bounds the CRCProbes a worker copies in one round of
// requests to learn the CRC-32s of a part's data before it pipes the part.
// A part with more, as many tiny entries make, is assembled in memory
// instead, where reading it gives the CRCs.
const MaxCRCProbes = 8

// CRCProbes lists, as indexes into segs, the data segments of an upload
// part whose CRC-32 a worker must learn before it can send the part in one
// pass. That is every range short of an entry's whole data, and an entry's
// whole data when need says so, because its CRC-32 is not known or because
// the job copies the entry's rest after the part and the header carries
// the CRC-32 combined from both.
func CRCProbes[E any, P Placed[E]](entries []E, segs []Segment, need func(P) bool) []int {
	return AppendCRCProbes(nil, entries, segs, need)
}

// AppendCRCProbes appends CRCProbes to out.
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
// CRC-32 is the one S3 may store for the source object. A worker asks for
// it with a HEAD, a GET-class request, before it probes with a copy, a
// PUT-class one.
func WholeData[E any, P Placed[E]](entries []E, s Segment) bool {
	return s.Kind == SegmentData && s.From == 0 && s.To == dataSize[E, P](&entries[s.Entry])
}

// MinCRCProbe is the smallest range worth a probe. A copy request to learn
// the CRC-32 of less than this costs more than reading it, so a worker reads
// such a range ahead, making the GET the part needs anyway before the
// upload starts and sending the bytes from memory.
const MinCRCProbe = 256 << 10

// MaxReadAhead bounds the bytes a worker reads ahead to pipe a part, which
// it holds per part in flight.
const MaxReadAhead = 1 << 20

// SplitCRCProbes divides CRCProbes into those a worker probes with a copy
// and those it reads ahead, which are under MinCRCProbe or a range
// CopyRange says S3 cannot copy.
func SplitCRCProbes[E any, P Placed[E]](entries []E, segs []Segment, need []int) (probe, read []int) {
	return AppendSplitCRCProbes[E, P](nil, nil, entries, segs, need)
}

// AppendSplitCRCProbes appends SplitCRCProbes to probe and read.
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

// Piped says whether a part whose data needs the probes and reads ahead
// SplitCRCProbes gives is sent in one pass, its GETs piped into UploadPart,
// rather than assembled first. It is when the probes are few and the small
// ranges together fit MaxReadAhead. A part of many small entries is
// assembled, since reading ahead would take all of it.
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

// CopyRange returns the x-amz-copy-source-range of an UploadPartCopy of the
// bytes [from, to) of a source of size bytes, or "" for the whole source.
// S3 copies a byte range only "if the source object is greater than 5 MB",
// as UploadPartCopy's reference says, so for a part of a source of 5 MiB or
// less ok is false and its bytes must be read instead.
func CopyRange(from, to, size int64) (rng string, ok bool) {
	switch {
	case from == 0 && to == size:
		return "", true
	case size <= minPartSize:
		return "", false
	}
	return fmt.Sprintf("bytes=%d-%d", from, to-1), true
}
