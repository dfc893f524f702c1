package plan

import (
	"fmt"
	"hash/crc32"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// DataRead asks for the source bytes [From, To) of Entry, into Dst.
type DataRead struct {
	Entry    *PlacedEntry
	From, To int64
	Dst      []byte
}

// Directory is where the central directory starts and, for a final part,
// how its bytes are read.
type Directory struct {
	Offset int64
	Read   func(computed map[EntryIndex]uint32) ([]byte, error)
}

// Tail is the CRC-32 of an entry's last Len bytes of data, which a copy
// after the part holds.
type Tail struct {
	CRC uint32
	Len int64
}

// BuildPart assembles the bytes of an upload part. entries are the part's
// entries, First..First+Count-1, with every CRC-32 known so far. For final
// parts only, dir.Read receives the CRCs computed from the part's own data
// and returns the central directory and end records from the first of their
// bytes in the part on, at least to the part's end. readAll fills every
// DataRead, in any order or concurrently. tails, by entry index, give the
// CRC-32 of the rest of an entry whose start the part holds and whose rest
// a copy after it holds; they may be nil.
//
// It computes the CRC-32 of every entry whose data lies wholly in the part,
// checks it against a known one, and returns those it computed by entry
// index. A header whose CRC is neither known nor computable is an error, so
// it never writes a guess.
func BuildPart(part *Part, entries []PlacedEntry, dir Directory, readAll func([]DataRead) error, tails map[EntryIndex]Tail) ([]byte, map[EntryIndex]uint32, error) {
	buf := make([]byte, part.Size())
	segs := partwork.Segments(entries, dir.Offset, part.Start, part.End)
	var reads []DataRead
	pos := int64(0)
	for _, s := range segs {
		n := s.To - s.From
		if s.Kind == partwork.SegmentData {
			reads = append(reads, DataRead{Entry: &entries[s.Entry], From: s.From, To: s.To, Dst: buf[pos : pos+n]})
		}
		pos += n
	}
	if len(reads) > 0 {
		if err := readAll(reads); err != nil {
			return nil, nil, err
		}
	}
	computed := map[EntryIndex]uint32{}
	pos = 0
	var hdr []byte
	for _, s := range segs {
		n := s.To - s.From
		switch s.Kind {
		case partwork.SegmentData:
			e := &entries[s.Entry]
			tail, hasTail := tails[e.Index]
			if s.From == 0 && (s.To == e.Size || hasTail && s.To+tail.Len == e.Size) {
				got := crc32.ChecksumIEEE(buf[pos : pos+n])
				if s.To < e.Size {
					got = zipformat.CombineCRC(got, tail.CRC, tail.Len)
				}
				if e.CRC32.Known && e.CRC32.Sum != got {
					return nil, nil, &failure.ChecksumMismatchError{What: fmt.Sprintf("entry %q", e.Name), Algorithm: "CRC-32", Got: fmt.Sprintf("%08x", got), Want: fmt.Sprintf("%08x", e.CRC32.Sum),
						Source: "the plan", Fix: "the source changed, or the manifest's CRC is wrong"}
				}
				computed[e.Index] = got
			}
		case partwork.SegmentDirectory:
			if dir.Read == nil {
				return nil, nil, fmt.Errorf("part %d: holds the central directory, which only the finalizer builds", part.Number)
			}
			b, err := dir.Read(computed)
			if err != nil {
				return nil, nil, err
			}
			if int64(len(b)) < n {
				return nil, nil, fmt.Errorf("part %d: central directory from byte %d is %d bytes, need %d", part.Number, s.From, len(b), n)
			}
			copy(buf[pos:pos+n], b[:n])
		}
		pos += n
	}
	// Headers go last, when an entry wholly in the part has its CRC computed.
	pos = 0
	for _, s := range segs {
		n := s.To - s.From
		if s.Kind == partwork.SegmentHeader {
			e := &entries[s.Entry]
			crc, ok := e.CRC32.Sum, e.CRC32.Known
			if c, got := computed[e.Index]; got {
				crc, ok = c, true
			}
			if !ok {
				return nil, nil, &UnknownCRCError{e.Name}
			}
			hdr = AppendLocalHeader(hdr[:0], e, crc)
			copy(buf[pos:pos+n], hdr[s.From:s.To])
		}
		pos += n
	}
	return buf, computed, nil
}
