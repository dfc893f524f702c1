package partwork

import (
	"iter"
	"slices"
)

// Chains: a part built server-side. S3 lets the last part of a multipart
// upload be of any size, so a small piece can be appended to an object of at
// least 5 MiB without downloading it: a two-part upload [copy of what is
// built so far][piece]. A chain starts from a 5 MiB pad object (so that it can
// start with a local header), appends the part's pieces round by round —
// generated header bytes, ranged copies of sources; pieces of 5 MiB or more
// ride along as middle parts of a round — and the finished object, without
// the pad, is copied into the archive's upload as one part. No object bytes
// pass through the worker: it sends only local headers.

// PadSize is the size of the zero pad a chain starts from.
const PadSize = minPartSize

// ChainPiece is appended in a chain round: bytes the worker sends (one or
// more segments back to back: generated header bytes, and ranges of sources
// of 5 MiB or less, which S3 copies only whole — CopyRange) or a copy of
// one source range.
type ChainPiece struct {
	Copy     bool
	Segments []Segment
	Size     int64
}

// ChainRound appends Middle (copies of at least 5 MiB) and Last to what is
// built so far.
type ChainRound struct {
	Middle []ChainPiece
	Last   ChainPiece
}

// Pieces are the round's pieces in order, Middle then Last, without
// appending one to the other (a slice a round, millions at millions of
// entries).
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
// from entries (consecutive placed entries covering the range).
func ChainRounds[E any, P Placed[E]](entries []E, start, end int64) []ChainRound {
	// Pieces hold runs of segs, not copies of them: a chain part of
	// thousands of small objects lists its rounds for every plan auto
	// prices, and a slice a piece was most of what planning allocated.
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
		// Their own capacity: appending to one must not write over the next.
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

// sameArray says whether run ends right before next in one array: next
// extends run.
func sameArray(run, next []Segment) bool {
	return len(run) > 0 && &run[len(run)-1] == &next[0]
}

// ChainChecksums says which rounds' uploads are created with CRC-32 and
// which entries (positions in entries) the chain learns the CRC-32 of: a
// round that copies a whole object into an upload created with CRC-32 gets
// that object's CRC in S3's answer, so the worker copies those pieces before
// it writes any header and needs no HEAD for them. The last round never
// carries a checksum, nor does a round right after one that does: what a
// round copies from must have no stored checksum, because some S3 servers
// answer a ranged copy of a checksummed object with the whole object's
// checksum (docs/versitygw.md, fact a) — the chain copies ranges of what it
// has built, and its product is copied in a range into the archive.
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

// ChainSteps is how many round trips a chain part's worker makes one after
// another (create/worker_chain.go), given which rounds ChainChecksums opens
// early: the GET of its entries; the rounds opened early, all side by side
// (Create, then their copies); the first round's Create, unless opened
// early; each round's copy of what is built (beside the first round's own
// copies and header uploads) and its Complete — the next round's Create,
// copies and header uploads need nothing built, and are made while the
// round before is built —; the copy of the product into the archive. Each
// step waits for a request's answer; the bytes the server moves are priced
// apart.
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
