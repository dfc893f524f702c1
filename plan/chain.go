package plan

import (
	"cmp"
	"slices"
	"sort"

	"github.com/s3zip/s3zip/internal/partwork"
)

// chainCost is what building one chain part takes.
type chainCost struct {
	Rounds       int
	Uploaded     int64 // bytes sent by the worker: headers, ranges S3 cannot copy
	ServerCopied int64 // bytes S3 copies, rounds included
	Requests     Requests
}

// costOfChain prices a chain part's rounds, as partwork.ChainRounds plans them.
func costOfChain(rounds []partwork.ChainRound) chainCost {
	var c chainCost
	built := int64(0)
	for _, r := range rounds {
		c.Rounds++
		// Each round copies what is built, or while that is shorter than a
		// part, its last MinPartSize bytes, the end of the pad and all of it.
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
					if s.Kind == partwork.SegmentData {
						c.Requests.Get++ // a range S3 cannot copy, read
					}
				}
			}
		}
	}
	c.Requests.UploadPartCopy++ // into the archive
	c.ServerCopied += built
	// Each round object is deleted once the next round or the archive has
	// copied it; DeleteObject is free on S3 and runs beside the rounds.
	c.Requests.Delete += c.Rounds
	return c
}

// chainTail cuts the last span when runs are chained. The data before the
// central directory becomes chain parts, and the final part holds only the
// directory. Data too short to be a part joins the part before it.
func (p *Plan) chainTail(parts []Part, s span, opts Options) []Part {
	data := p.DirectoryOffset - s.start
	final := Part{Kind: PartUpload, Start: p.DirectoryOffset, End: s.end}
	switch {
	case data == 0:
		return append(parts, final)
	case data >= MinPartSize:
		// Every round recopies what its chain has built, so short chains copy least.
		short := opts
		short.PartSize = MinPartSize
		return append(append(parts, cutParts(PartChain, s.start, p.DirectoryOffset, short)...), final)
	case len(parts) == 0:
		// The whole archive's data is under 5 MiB, so the finalizer builds one part.
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
// at most MaxParts, the second level of a two-level assembly.
// The finalizer's parts stay as they are.
func coalesce(parts []Part) []Part {
	n := firstFinal(parts)
	final, body := parts[n:], parts[:n]
	if len(final) >= MaxParts {
		return parts // the directory alone is over the limit, and cut refuses it
	}
	for g := ceilDiv(int64(len(body)), int64(MaxParts-len(final))); g <= int64(len(body)); g++ {
		var out []Part
		full := false // a group stopped at g parts, so a larger g merges more
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
// object under 5 MiB costs a round, whatever the order. Prefixes of copied
// objects would cost more rounds, so there are none. Whole small objects
// cover each run between two copied objects to 5 MiB, the largest first,
// then the smallest until covered. When small objects run out the big ones
// pair up, one riding in the run as a middle part and the next copied.
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
			// Not enough left to cover a run, so put them back for the tail.
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
	// Big objects left go in pairs, one ridden and one copied.
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
