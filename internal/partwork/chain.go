package partwork

import (
	"iter"
	"slices"
)

// A chain builds a part server-side. S3 lets the last part of a multipart
// upload be of any size, so a two-part upload of a copy of what is built and
// a small piece appends the piece to an object of at least 5 MiB without
// downloading it. A chain starts from a 5 MiB pad object, so that it can
// start with a local header, and appends the part's pieces round by round;
// pieces of 5 MiB or more ride along as middle parts of a round. The finished
// object, without the pad, is copied into the archive's upload as one part,
// so the worker sends only local headers.

// PadSize is the size of the zero pad a chain starts from.
const PadSize = minPartSize

// ChainPiece is appended in a chain round. It is either a copy of one
// source range, or bytes the worker sends, one or more segments back to
// back, of generated header bytes and of ranges of sources of 5 MiB or less,
// which CopyRange says S3 copies only whole.
type ChainPiece struct {
	Copy     bool
	Segments []Segment
	Size     int64
}

// ChainRound appends Middle, copies of at least 5 MiB each, and Last to
// what is built so far.
type ChainRound struct {
	Middle []ChainPiece
	Last   ChainPiece
}

// Pieces returns the round's pieces in order, Middle then Last, without
// appending one to the other, which would make a slice a round, millions at
// millions of entries.
func (r *ChainRound) Pieces() iter.Seq[ChainPiece] {
	return func(yield func(ChainPiece) bool) {
		for _, pc := range r.Middle {
			if !yield(pc) {
				return
			}
		}
		yield(r.Last)
	}
}

// ChainRounds lists the rounds that build the archive bytes [start, end)
// from entries, consecutive placed entries covering the range.
func ChainRounds[E any, P Placed[E]](entries []E, start, end int64) []ChainRound {
	// Pieces hold runs of segs, not copies of them. A chain part of
	// thousands of small objects lists its rounds for every plan auto
	// prices, and a slice a piece would be most of what planning allocates.
	segs := Segments[E, P](entries, end, start, end)
	pieces := make([]ChainPiece, 0, len(segs))
	for j, s := range segs {
		n := s.To - s.From
		if _, copyable := CopyRange(s.From, s.To, dataSize[E, P](&entries[s.Entry])); s.Kind == SegmentHeader || !copyable {
			if k := len(pieces) - 1; k >= 0 && !pieces[k].Copy && j > 0 && sameArray(pieces[k].Segments, segs[j-1:j]) {
				pieces[k].Segments = pieces[k].Segments[:len(pieces[k].Segments)+1]
				pieces[k].Size += n
				continue
			}
			pieces = append(pieces, ChainPiece{Segments: segs[j : j+1], Size: n})
			continue
		}
		if n <= maxPartSize {
			pieces = append(pieces, ChainPiece{Copy: true, Segments: segs[j : j+1], Size: n})
			continue
		}
		// A source range over 5 GiB is copied in ranges of at most 5 GiB.
		k := (n + maxPartSize - 1) / maxPartSize
		for i := int64(0); i < k; i++ {
			from, to := s.From+n*i/k, s.From+n*(i+1)/k
			pieces = append(pieces, ChainPiece{Copy: true, Segments: []Segment{{Kind: SegmentData, Entry: s.Entry, From: from, To: to}}, Size: to - from})
		}
	}
	for i := range pieces {
		// Each has its own capacity, so appending to one cannot write over the next.
		pieces[i].Segments = slices.Clip(pieces[i].Segments)
	}
	rounds := make([]ChainRound, 0, len(pieces))
	var middle []ChainPiece
	for _, pc := range pieces {
		if pc.Copy && pc.Size >= minPartSize {
			middle = append(middle, pc)
			continue
		}
		rounds = append(rounds, ChainRound{Middle: middle, Last: pc})
		middle = nil
	}
	if n := len(middle); n > 0 {
		rounds = append(rounds, ChainRound{Middle: middle[:n-1], Last: middle[n-1]})
	}
	return rounds
}

// sameArray says whether run ends right before next in one array, so that
// next extends run.
func sameArray(run, next []Segment) bool {
	return len(run) > 0 && &run[len(run)-1] == &next[0]
}

// ChainChecksums says which rounds' uploads are created with CRC-32 and
// the positions in entries of those the chain learns the CRC-32 of. A round
// that copies a whole object into an upload created with CRC-32 gets that
// object's CRC in S3's answer, so the worker copies those pieces before it
// writes any header and needs no HEAD for them. The last round never
// carries a checksum, nor does a round right after one that does. The chain
// copies ranges of what it has built and its product in a range into the
// archive, and some S3 servers answer a ranged copy of a checksummed object
// with the whole object's checksum, as docs/versitygw.md, fact a, records.
func ChainChecksums[E any, P Placed[E]](entries []E, rounds []ChainRound) (crc []bool, learned []bool) {
	crc = make([]bool, len(rounds))
	learned = make([]bool, len(entries))
	for r := 0; r+1 < len(rounds); r++ {
		if r > 0 && crc[r-1] {
			continue
		}
		for pc := range rounds[r].Pieces() {
			if k, ok := WholeCopy[E, P](entries, pc); ok {
				crc[r], learned[k] = true, true
			}
		}
	}
	return crc, learned
}

// WholeCopy says whether a piece copies an entry's whole object, and which.
func WholeCopy[E any, P Placed[E]](entries []E, pc ChainPiece) (int, bool) {
	if !pc.Copy || len(pc.Segments) != 1 {
		return 0, false
	}
	s := pc.Segments[0]
	size := dataSize[E, P](&entries[s.Entry])
	return s.Entry, s.Kind == SegmentData && s.From == 0 && s.To == size && size > 0
}

// ChainSteps returns how many round trips a chain part's worker in
// create/worker_chain.go makes one after another, given which rounds
// ChainChecksums opens early. The steps are the GET of its entries, the
// Create and then the copies of the rounds opened early side by side, the
// first round's Create unless opened early, each round's copy of what is
// built and its Complete, and the copy of the product into the archive.
// A round's Create, own copies and header uploads need nothing built, so
// they are made while the round before is built. The bytes the server
// moves are priced apart.
func ChainSteps(early []bool) int {
	if len(early) == 0 {
		return 2
	}
	steps := 2 + 2*len(early)
	if !early[0] {
		steps++
	}
	if slices.Contains(early, true) {
		steps += 2
	}
	return steps
}
