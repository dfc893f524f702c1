package plan

import "sort"

// streamLayout keeps the input order and copies nothing.
func streamLayout(entries []Entry) layout {
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	return layout{order: order}
}

// duoLayout pairs streamed parts with server-side copies ("Duo", after the
// reference article, improved).
//
// Every copied object needs a streamed part of at least MinPartSize right in
// front of it, because its local header must precede its data and a header
// alone is far too small to be a part. So with k objects copied, at least
// k·MinPartSize bytes are streamed, and at least everything that is not
// copied: streamed(k) = max(k·M, total − Σ copied sizes). Copying the largest
// objects first maximises the sum for every k; duoLayout takes the k where
// the two terms cross, which is the least any single-upload Duo layout can
// stream. Each streamed part is then packed to exactly M bytes: local
// headers and whole objects from the fill pool (everything not copied),
// largest first that fits, and the gap left is closed with a prefix of the
// copied object (its remainder, still ≥ M, is copied with a ranged copy).
// When the fill pool runs dry, remaining big objects pair with each other
// (one streamed, the next copied) instead of all being streamed; what is left
// of the pool is streamed after the last copy, with the central directory.
func duoLayout(entries []Entry) layout {
	weight := func(i int) int64 { return localHeaderSize(&entries[i]) + entries[i].Size }
	total := int64(0)
	var bigs []int
	for i := range entries {
		total += weight(i)
		if !entries[i].Dir && entries[i].Size >= MinPartSize {
			bigs = append(bigs, i)
		}
	}
	sort.SliceStable(bigs, func(a, b int) bool { return entries[bigs[a]].Size > entries[bigs[b]].Size })

	k, best, copied := 0, total, int64(0)
	for j, i := range bigs {
		copied += entries[i].Size
		if s := max(int64(j+1)*MinPartSize, total-copied); s < best {
			best, k = s, j+1
		}
	}
	copySet := bigs[:k]

	inCopySet := make(map[int]bool, k)
	for _, i := range copySet {
		inCopySet[i] = true
	}
	fill := make([]int, 0, len(entries)-k)
	for i := range entries {
		if !inCopySet[i] {
			fill = append(fill, i)
		}
	}
	sort.SliceStable(fill, func(a, b int) bool { return weight(fill[a]) > weight(fill[b]) })
	pool := newFillPool(fill, weight)

	l := layout{order: make([]int, 0, len(entries)), copyFrom: make(map[int]int64, k)}
	lo, hi := 0, len(copySet) // copySet[lo:hi] are still to place
	for lo < hi {
		big := copySet[lo]
		lo++
		room := MinPartSize - localHeaderSize(&entries[big])
		slack := entries[big].Size - MinPartSize // the longest prefix we may stream
		for room > slack {
			i, ok := pool.largestUpTo(room)
			if !ok {
				break
			}
			l.order = append(l.order, i)
			room -= weight(i)
		}
		if room > slack {
			// Nothing fits the gap: overshoot with the smallest fill object,
			// or, with the pool empty, stream the smallest big object left.
			i, ok := pool.smallest()
			if !ok && lo < hi {
				hi--
				i, ok = copySet[hi], true
			}
			if ok {
				l.order = append(l.order, i)
				room -= weight(i)
			}
		}
		l.order = append(l.order, big)
		if room <= slack {
			l.copyFrom[big] = max(room, 0)
		} // else nothing was left to put in front of it: it is streamed whole
	}
	l.order = append(l.order, pool.rest()...)
	return l
}

// fillPool hands out fill objects, sorted by weight descending, each once.
type fillPool struct {
	items  []int
	weight []int64
	next   []int // union-find: next unused position at or after p
	tail   int   // every position after tail is used
}

func newFillPool(items []int, weight func(int) int64) *fillPool {
	p := &fillPool{items: items, weight: make([]int64, len(items)), next: make([]int, len(items)+1), tail: len(items) - 1}
	for k, i := range items {
		p.weight[k] = weight(i)
	}
	for k := range p.next {
		p.next[k] = k
	}
	return p
}

func (p *fillPool) find(k int) int {
	for p.next[k] != k {
		p.next[k] = p.next[p.next[k]]
		k = p.next[k]
	}
	return k
}

func (p *fillPool) take(k int) int {
	p.next[k] = k + 1
	return p.items[k]
}

// largestUpTo takes the heaviest unused object weighing at most w.
func (p *fillPool) largestUpTo(w int64) (int, bool) {
	k := sort.Search(len(p.weight), func(k int) bool { return p.weight[k] <= w })
	if k = p.find(k); k >= len(p.items) {
		return 0, false
	}
	return p.take(k), true
}

// smallest takes the lightest unused object.
func (p *fillPool) smallest() (int, bool) {
	for ; p.tail >= 0; p.tail-- {
		if p.find(p.tail) == p.tail {
			return p.take(p.tail), true
		}
	}
	return 0, false
}

// rest takes every unused object, in input order.
func (p *fillPool) rest() []int {
	var out []int
	for k := p.find(0); k < len(p.items); k = p.find(k + 1) {
		out = append(out, p.items[k])
	}
	sort.Ints(out)
	return out
}
