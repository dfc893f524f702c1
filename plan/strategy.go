package plan

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// streamLayout keeps the input order and copies nothing.
func streamLayout(entries []Entry) layout {
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	return layout{order: order}
}

// duoLayout pairs streamed parts with server-side copies. The k largest
// objects are copied, each behind a streamed run of at least MinPartSize
// made of whole fill objects: a bin-covered group of the smallest, or one
// larger object topped up by a prefix of its copy. bestK picks k where the
// streamed bytes are least. docs/strategies.md, section "How duo lays out
// an archive", gives the construction, its cost and its lower bound.
func duoLayout(entries []Entry) layout {
	if !slices.ContainsFunc(entries, copyable) {
		return streamLayout(entries)
	}
	d := newDuo(entries)
	k := d.bestK()
	return d.build(k)
}

// copyable says whether an entry can be a part of its own, made by UploadPartCopy.
func copyable(e Entry) bool { return !e.Dir && e.Size >= MinPartSize }

type duo struct {
	entries []Entry
	w       []int64 // local header + data
	asc     []int   // every entry, by weight ascending, ties by index
	wAsc    []int64 // w[asc[p]]
	rankAsc []int32 // position of asc[p] in bigs, or −1
	bigs    []int   // copyable entries, by weight descending
	totalW  int64
	f, sum  []int64 // scratch for fill weights ascending and their prefix sums
}

func newDuo(entries []Entry) *duo {
	n := len(entries)
	d := &duo{entries: entries, w: make([]int64, n), asc: make([]int, n), wAsc: make([]int64, n), rankAsc: make([]int32, n)}
	for i := range entries {
		d.w[i] = localHeaderSize(&entries[i]) + entries[i].Size
		d.totalW += d.w[i]
		d.asc[i] = i
	}
	slices.SortFunc(d.asc, func(a, b int) int { return cmp.Or(cmp.Compare(d.w[a], d.w[b]), cmp.Compare(a, b)) })
	for p := n - 1; p >= 0; p-- {
		i := d.asc[p]
		d.wAsc[p], d.rankAsc[p] = d.w[i], -1
		if copyable(entries[i]) {
			d.rankAsc[p] = int32(len(d.bigs))
			d.bigs = append(d.bigs, i)
		}
	}
	return d
}

// fill sets d.f to the weights of the entries not among the k largest
// copyable ones, ascending, and d.sum to their prefix sums.
func (d *duo) fill(k int) []int64 {
	f, sum := d.f[:0], append(d.sum[:0], 0)
	for p, w := range d.wAsc {
		if r := d.rankAsc[p]; r < 0 || int(r) >= k {
			f = append(f, w)
			sum = append(sum, sum[len(sum)-1]+w)
		}
	}
	d.f, d.sum = f, sum
	return f
}

// covers says whether the n smallest fill weights make at least want runs
// of at least M each, in O(want·log n). Each run takes the largest weight
// left and then the smallest until M is reached, as build makes them.
func (d *duo) covers(n, want int) bool {
	f, sum := d.f, d.sum
	lo, hi, c := 0, n-1, 0
	for lo <= hi && c < want {
		top := f[hi]
		hi--
		if top >= MinPartSize {
			c++
			continue
		}
		// The least j with f[lo:j] adding up to M − top, if any.
		need := sum[lo] + MinPartSize - top
		j := lo + sort.Search(hi+2-lo, func(x int) bool { return sum[lo+x] >= need })
		if j > hi+1 {
			break
		}
		lo = j
		c++
	}
	return c >= want
}

// groups returns how many runs the smallest fill objects cover, and how
// many of them they use, leaving at least one object for every other run.
func (d *duo) groups(k int) (g, pool int) {
	e := len(d.f) - k
	if e < 0 {
		return 0, 0
	}
	if d.covers(e+k, k) {
		return k, e + k
	}
	lo, hi := 0, k-1 // covers(e+lo, lo) holds
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if d.covers(e+mid, mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, e + lo
}

// eval returns the bytes streamed before the central directory when the
// k largest copyable objects are copied, and whether every run can be made.
func (d *duo) eval(k int) (int64, bool) {
	f := d.fill(k)
	g, pool := d.groups(k)
	singles := f[pool:]
	empties := k - g - len(singles)
	streamed := d.totalW
	for j := 0; j < k; j++ {
		c := d.bigs[j]
		var need int64 // M − fill in the run, in order of need, largest first
		switch {
		case j < empties:
			need = MinPartSize
		case j-empties < len(singles):
			need = MinPartSize - singles[j-empties]
		}
		if need > d.w[c]-MinPartSize {
			return 0, false
		}
		streamed -= d.entries[c].Size - max(0, need-(d.w[c]-d.entries[c].Size))
	}
	return streamed, true
}

// bestK picks the number of copies that streams the least. It searches a
// grid of about 16 points over the possible k, then finer grids around the
// best point so far, down to single steps. The streamed bytes are smooth and
// unimodal in k on the inputs we know, and a grid search also survives small
// bumps. Each copy and its run take at least two parts, so k stays under
// MaxParts/2.
func (d *duo) bestK() int {
	const points = 16
	K := min(len(d.bigs), MaxParts/2)
	best, bestS := 0, d.totalW
	seen := make(map[int]bool)
	lo, hi := 0, K
	for {
		step := max(1, (hi-lo+points-1)/points)
		for k := lo; k <= hi; k += step {
			if seen[k] {
				continue
			}
			seen[k] = true
			if s, ok := d.eval(k); ok && (s < bestS || s == bestS && k < best) {
				best, bestS = k, s
			}
		}
		if step == 1 {
			return best
		}
		lo, hi = max(0, best-step), min(K, best+step)
	}
}

// build lays out the plan for k copies.
func (d *duo) build(k int) layout {
	d.fill(k)
	g, pool := d.groups(k)
	fill := make([]int, 0, len(d.f))
	for p, i := range d.asc {
		if r := d.rankAsc[p]; r < 0 || int(r) >= k {
			fill = append(fill, i)
		}
	}
	var leftover []int
	// Runs go in order of need, to match copies by slack: empty ones, then
	// singles smallest first, then groups. They are laid out evenly below.
	var runs [][]int
	singles := fill[pool:]
	for j := 0; j < k-g-len(singles); j++ {
		runs = append(runs, nil)
	}
	for _, i := range singles {
		runs = append(runs, []int{i})
	}
	lo, hi := 0, pool-1
	for lo <= hi {
		run := []int{fill[hi]}
		sum := d.w[fill[hi]]
		hi--
		for sum < MinPartSize && lo <= hi {
			run = append(run, fill[lo])
			sum += d.w[fill[lo]]
			lo++
		}
		if sum >= MinPartSize && len(runs) < k {
			runs = append(runs, run)
		} else {
			leftover = append(leftover, run...)
		}
	}
	l := layout{order: make([]int, 0, len(d.entries)), copyFrom: make(map[int]int64, k)}
	// sums[j] is run j's fill and its copy's local header; the run streams
	// that, or MinPartSize when a prefix of the copy tops it up.
	sums, streamed := make([]int64, len(runs)), make([]int64, len(runs))
	for j, run := range runs {
		c := d.bigs[j]
		sums[j] = d.w[c] - d.entries[c].Size
		for _, i := range run {
			sums[j] += d.w[i]
		}
		streamed[j] = max(sums[j], MinPartSize)
	}
	for _, j := range evenly(streamed) {
		run, c := runs[j], d.bigs[j]
		l.order = append(l.order, run...)
		l.order = append(l.order, c)
		if need := max(0, MinPartSize-sums[j]); need <= d.entries[c].Size-MinPartSize {
			l.copyFrom[c] = need
		} // else it cannot be copied: streamed whole, mergeShortStreams repairs
	}
	for j := len(runs); j < k; j++ {
		leftover = append(leftover, d.bigs[j])
	}
	sort.Ints(leftover)
	l.order = append(l.order, leftover...)
	return l
}

// evenly orders items of the given weights so that every stretch of them
// weighs about its share. The Map cuts batches of equal part counts in
// archive order, and the run waits for the heaviest batch. Each next item
// is the heaviest or the lightest left, whichever keeps the running total
// nearer its share of the whole, so every prefix is within about one item's
// weight of its share, and every stretch within about two.
func evenly(weights []int64) []int {
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(weights[a], weights[b]) })
	var total int64
	for _, w := range weights {
		total += w
	}
	out := make([]int, 0, len(order))
	var sum int64
	for lo, hi := 0, len(order)-1; lo <= hi; {
		share := float64(total) * float64(len(out)+1) / float64(len(order))
		heavy, light := float64(sum+weights[order[hi]]), float64(sum+weights[order[lo]])
		next := order[lo]
		if math.Abs(heavy-share) <= math.Abs(light-share) {
			next = order[hi]
			hi--
		} else {
			lo++
		}
		out = append(out, next)
		sum += weights[next]
	}
	return out
}
