package plan

import (
	"cmp"
	"iter"
	"slices"
	"sort"
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
const PadSize = MinPartSize

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
func ChainRounds(entries []PlacedEntry, start, end int64) []ChainRound {
	// Pieces hold runs of segs, not copies of them: a chain part of
	// thousands of small objects lists its rounds for every plan auto
	// prices, and a slice a piece was most of what planning allocated.
	segs := Segments(entries, end, start, end)
	pieces := make([]ChainPiece, 0, len(segs))
	for j, s := range segs {
		n := s.To - s.From
		if _, copyable := CopyRange(s.From, s.To, entries[s.Entry].Size); s.Kind == SegmentHeader || !copyable {
			if k := len(pieces) - 1; k >= 0 && !pieces[k].Copy && j > 0 && sameArray(pieces[k].Segments, segs[j-1:j]) {
				pieces[k].Segments = pieces[k].Segments[:len(pieces[k].Segments)+1]
				pieces[k].Size += n
				continue
			}
			pieces = append(pieces, ChainPiece{Segments: segs[j : j+1], Size: n})
			continue
		}
		if n <= MaxPartSize {
			pieces = append(pieces, ChainPiece{Copy: true, Segments: segs[j : j+1], Size: n})
			continue
		}
		// A source range over 5 GiB is copied in ranges of at most 5 GiB.
		k := ceilDiv(n, MaxPartSize)
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
		if pc.Copy && pc.Size >= MinPartSize {
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
func ChainChecksums(entries []PlacedEntry, rounds []ChainRound) (crc []bool, learned []bool) {
	crc = make([]bool, len(rounds))
	learned = make([]bool, len(entries))
	for r := 0; r+1 < len(rounds); r++ {
		if r > 0 && crc[r-1] {
			continue
		}
		for pc := range rounds[r].Pieces() {
			if k, ok := WholeCopy(entries, pc); ok {
				crc[r], learned[k] = true, true
			}
		}
	}
	return crc, learned
}

// WholeCopy says whether a piece copies an entry's whole object, and which.
func WholeCopy(entries []PlacedEntry, pc ChainPiece) (int, bool) {
	if !pc.Copy || len(pc.Segments) != 1 {
		return 0, false
	}
	s := pc.Segments[0]
	e := &entries[s.Entry]
	return s.Entry, s.Kind == SegmentData && s.From == 0 && s.To == e.Size && e.Size > 0
}

// ChainSteps is how many round trips a chain part's worker makes one after
// another (create/worker_chain.go), given which rounds plan.ChainChecksums opens
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

// ChainCost is what building one chain part takes.
type ChainCost struct {
	Rounds       int
	Uploaded     int64 // bytes sent by the worker: headers, ranges S3 cannot copy
	ServerCopied int64 // bytes S3 copies, rounds included
	Requests     Requests
}

// CostOfChain prices a chain part's rounds.
func CostOfChain(rounds []ChainRound) ChainCost {
	var c ChainCost
	built := int64(0)
	for _, r := range rounds {
		c.Rounds++
		// Each round copies what is built, or while that is shorter than a
		// part, its last MinPartSize bytes: the end of the pad and all of it.
		c.ServerCopied += max(built, MinPartSize)
		c.Requests.Create++
		c.Requests.Complete++
		c.Requests.UploadPartCopy++ // what is built so far
		for pc := range r.Pieces() {
			built += pc.Size
			if pc.Copy {
				c.Requests.UploadPartCopy++
				c.ServerCopied += pc.Size
			} else {
				c.Requests.UploadPart++
				c.Uploaded += pc.Size
				for _, s := range pc.Segments {
					if s.Kind == SegmentData {
						c.Requests.Get++ // a range S3 cannot copy, read
					}
				}
			}
		}
	}
	c.Requests.UploadPartCopy++ // into the archive
	c.ServerCopied += built
	// Each round object is deleted once the next round (or the archive) has
	// copied it; DeleteObject is free on S3 and runs beside the rounds.
	c.Requests.Delete += c.Rounds
	return c
}

// chainTail cuts the last span when runs are chained: the data before the
// central directory becomes chain parts, and the final part holds only the
// directory. Data too short to be a part joins the part before it.
func (p *Plan) chainTail(parts []Part, s span, opts Options) []Part {
	data := p.DirectoryOffset - s.start
	final := Part{Kind: PartUpload, Start: p.DirectoryOffset, End: s.end}
	switch {
	case data == 0:
		return append(parts, final)
	case data >= MinPartSize:
		// Every round recopies what its chain has built: short chains copy least.
		short := opts
		short.PartSize = MinPartSize
		return append(append(parts, cutParts(PartChain, s.start, p.DirectoryOffset, short)...), final)
	case len(parts) == 0:
		// The whole archive's data is under 5 MiB: one part, built by the finalizer.
		return append(parts, Part{Kind: PartUpload, Start: s.start, End: s.end})
	}
	last := &parts[len(parts)-1]
	if last.Size()+data > MaxPartSize {
		// Keep the copy, shortened, and chain its last 5 MiB with the tail.
		cut := last.End - MinPartSize
		last.End = cut
		return append(parts, Part{Kind: PartChain, Start: cut, End: p.DirectoryOffset}, final)
	}
	last.Kind, last.End = PartChain, p.DirectoryOffset
	return append(parts, final)
}

// coalesce merges neighbouring parts into chain parts until the upload has
// at most MaxParts: the second level of a two-level assembly.
// The finalizer's parts stay as they are.
func coalesce(parts []Part) []Part {
	n := firstFinal(parts)
	final, body := parts[n:], parts[:n]
	if len(final) >= MaxParts {
		return parts // the directory alone is over the limit: cut refuses it
	}
	for g := ceilDiv(int64(len(body)), int64(MaxParts-len(final))); g <= int64(len(body)); g++ {
		var out []Part
		full := false // a group stopped at g parts: a larger g merges more
		for i := 0; i < len(body); {
			group := body[i]
			n := int64(1)
			for i+int(n) < len(body) && n < g && body[i+int(n)].End-group.Start <= MaxPartSize {
				group.End = body[i+int(n)].End
				n++
			}
			full = full || n == g && i+int(n) < len(body)
			if n > 1 {
				group.Kind = PartChain
			}
			out = append(out, group)
			i += int(n)
		}
		if len(out)+len(final) <= MaxParts {
			return append(out, final...)
		}
		if !full {
			break // every group is as large as S3's largest part allows
		}
	}
	return parts
}

// chainLayout orders entries for chained runs. Every local header and every
// object under 5 MiB costs a round, whatever the order; prefixes of copied
// objects would cost more rounds, so there are none: each run between two
// copied objects is covered to 5 MiB by whole small objects (largest first,
// then smallest until covered), and when small objects run out the big ones
// pair up — one rides in the run as a middle part, the next is copied.
// Small objects that cover no run are chained after the last copy.
func chainLayout(entries []Entry) layout {
	var bigs, smalls []int
	for i := range entries {
		if copyable(entries[i]) {
			bigs = append(bigs, i)
		} else {
			smalls = append(smalls, i)
		}
	}
	w := make([]int64, len(entries))
	for i := range entries {
		w[i] = localHeaderSize(&entries[i]) + entries[i].Size
	}
	weight := func(i int) int64 { return w[i] }
	heaviestFirst := func(a, b int) int {
		if c := cmp.Compare(w[b], w[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	slices.SortFunc(smalls, heaviestFirst)
	slices.SortFunc(bigs, heaviestFirst)

	var runs [][]int
	lo, hi := 0, len(smalls)-1
	for lo <= hi && len(runs) < len(bigs) {
		run := []int{smalls[lo]}
		sum := weight(smalls[lo])
		lo++
		for sum < MinPartSize && lo <= hi {
			run = append(run, smalls[hi])
			sum += weight(smalls[hi])
			hi--
		}
		if sum < MinPartSize {
			// Not enough left to cover a run: put them back for the tail.
			lo, hi = lo-1, hi+len(run)-1
			break
		}
		runs = append(runs, run)
	}
	l := layout{order: make([]int, 0, len(entries)), copyFrom: map[int]int64{}}
	b := 0
	for _, run := range runs {
		l.order = append(l.order, run...)
		l.order = append(l.order, bigs[b])
		l.copyFrom[bigs[b]] = 0
		b++
	}
	// Big objects left: pairs of (ridden, copied).
	for ; b+1 < len(bigs); b += 2 {
		l.order = append(l.order, bigs[b], bigs[b+1])
		l.copyFrom[bigs[b+1]] = 0
	}
	var tail []int
	if b < len(bigs) {
		tail = append(tail, bigs[b])
	}
	if lo <= hi {
		tail = append(tail, smalls[lo:hi+1]...)
	}
	sort.Ints(tail)
	l.order = append(l.order, tail...)
	return l
}
