package s3prefix

// The key space under a prefix, numbered so that it can be cut. S3 lists
// keys in UTF-8 byte order, which is the order of their runes; with the
// runes keys are seen to use as digits (and "the key ended" as digit 0
// below all of them), the keys after a prefix become numbers in the same
// order, and a range of keys can be cut where the numbers are evenly (or
// geometrically) spaced. The cut points are only guesses at where keys
// lie: every point is checked as a string, and listing is exact whatever
// they are; good guesses only make the pieces even.

import (
	"math"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxDigits bounds how many runes of a key the numbering looks at: S3
// keys are at most 1,024 bytes, and cuts need only tell apart keys a page
// apart.
const maxDigits = 256

// alphabet is the set of runes seen in keys after the prefix: the digits
// of the numbering.
type alphabet struct {
	ascii [utf8.RuneSelf]bool
	other map[rune]bool
}

// add puts the runes of s into the alphabet.
func (a *alphabet) add(s string) {
	for _, r := range s {
		if r < utf8.RuneSelf {
			a.ascii[r] = true
			continue
		}
		if a.other == nil {
			a.other = map[rune]bool{}
		}
		a.other[r] = true
	}
}

// clone is a copy to grow apart from a.
func (a *alphabet) clone() *alphabet {
	c := &alphabet{ascii: a.ascii}
	if a.other != nil {
		c.other = make(map[rune]bool, len(a.other))
		for r := range a.other {
			c.other[r] = true
		}
	}
	return c
}

// runes are the alphabet in order.
func (a *alphabet) runes() []rune {
	var rs []rune
	for r, ok := range a.ascii {
		if ok {
			rs = append(rs, rune(r))
		}
	}
	other := make([]rune, 0, len(a.other))
	for r := range a.other {
		other = append(other, r)
	}
	slices.Sort(other)
	return append(rs, other...)
}

// numbering maps key suffixes to numbers of width digits in base
// len(runes)+1, preserving order (strictly for suffixes over the runes and
// no longer than width).
type numbering struct {
	runes []rune
	base  *big.Int
	width int
}

func newNumbering(runes []rune, width int) numbering {
	return numbering{runes: runes, base: big.NewInt(int64(len(runes) + 1)), width: min(max(width, 1), maxDigits)}
}

// digit is r's digit: 1 + its place among the runes; a rune between two of
// them takes the lower one's, so order is kept if not strictly.
func (n numbering) digit(r rune) int64 {
	i, found := slices.BinarySearch(n.runes, r)
	if found {
		return int64(i + 1)
	}
	return int64(i)
}

// value is the number of suffix s.
func (n numbering) value(s string) *big.Int {
	v, d := new(big.Int), new(big.Int)
	rs := []rune(s)
	for i := range n.width {
		v.Mul(v, n.base)
		if i < len(rs) {
			v.Add(v, d.SetInt64(n.digit(rs[i])))
		}
	}
	return v
}

// top is the largest number: every digit the last rune.
func (n numbering) top() *big.Int {
	v := new(big.Int).Exp(n.base, big.NewInt(int64(n.width)), nil)
	return v.Sub(v, big.NewInt(1))
}

// suffix is the string of number v, up to its first 0 digit (a key ends
// there): at most v itself.
func (n numbering) suffix(v *big.Int) string {
	digits := make([]int64, n.width)
	q, r := new(big.Int).Set(v), new(big.Int)
	for i := n.width - 1; i >= 0; i-- {
		q.QuoRem(q, n.base, r)
		digits[i] = r.Int64()
	}
	var s []rune
	for _, d := range digits {
		if d == 0 {
			break
		}
		s = append(s, n.runes[d-1])
	}
	return string(s)
}

// gapPages is the most pages a range's estimate is believed for: 10^8
// keys, more than anyone keeps under one prefix. Past it the numbering
// spans a gap in the keys (the next folder), not keys.
const gapPages = 1e5

// spanSample is what listing a range of keys has shown so far: the first
// and the last key of the last page S3 gave it (the keys near the cursor
// are the best guide to the keys ahead: a page across a folder's end spans
// more of the numbering than the pages after it).
type spanSample struct {
	prefix        string
	first, cursor string
	upTo          string // the range's last possible key, when bounded
	bounded       bool
}

// cutPlan is where to cut a range: ahead is the number of pages the range
// seems to hold beyond the page being listed (+Inf when it is unbounded:
// where its keys end is unknown), and geometry(j, n) where the j-th of n
// pieces of the rest starts, the first just past the page in flight (the
// cursor plus one page's span of the key space).
type cutPlan struct {
	num      numbering
	ahead    float64
	geometry func(j, n int) *big.Int
}

// plan numbers the range's keys and estimates what lies ahead.
func (s spanSample) plan(abc *alphabet) (cutPlan, bool) {
	a := abc.clone()
	width := 0
	for _, k := range []string{s.first, s.cursor, s.upTo} {
		suffix := trimPrefix(k, s.prefix)
		a.add(suffix)
		width = max(width, utf8.RuneCountInString(suffix)+1)
	}
	num := newNumbering(a.runes(), width)
	if len(num.runes) == 0 || s.cursor == "" {
		return cutPlan{}, false
	}
	first, cursor := num.value(trimPrefix(s.first, s.prefix)), num.value(trimPrefix(s.cursor, s.prefix))
	end := num.top()
	if s.bounded {
		end = num.value(trimPrefix(s.upTo, s.prefix))
	}
	step := new(big.Int).Sub(cursor, first)
	if step.Sign() <= 0 {
		step.SetInt64(1)
	}
	start := new(big.Int).Add(cursor, step)
	if start.Cmp(end) >= 0 {
		return cutPlan{}, false
	}
	left := new(big.Int).Sub(end, start)
	logAhead := logInt(left) - logInt(step)
	p := cutPlan{num: num, ahead: math.Exp(logAhead)}
	switch {
	case s.bounded && p.ahead < gapPages:
		// Keys seen on both sides, a plausible number of pages apart:
		// spread the cuts evenly between them.
		p.geometry = func(j, n int) *big.Int {
			v := new(big.Int).Mul(left, big.NewInt(int64(j)))
			return v.Add(v.Quo(v, big.NewInt(int64(n))), start)
		}
	default:
		// The end is more pages away than any prefix holds (keys in
		// folders: the next folder's name is far from this one's keys in
		// the numbering), or unknown: pieces grow geometrically from one
		// page's span to the end (of the key space, when unbounded), so
		// the keys near (a dense run) are cut finely and the rest coarsely,
		// and a prefix of keys spread evenly gets pieces within a few times
		// of each other.
		if !s.bounded {
			p.ahead = math.Inf(1)
		}
		p.geometry = func(j, n int) *big.Int {
			if j == 0 {
				return start
			}
			return addScaled(start, step, logAhead*float64(j)/float64(n))
		}
	}
	return p, true
}

// cuts are up to n keys strictly between the cursor and the range's end,
// in order, cutting what lies past the page in flight into n+1 pieces:
// the range keeps the first (it ends at the first key), a new range runs
// from each key to the next (the last to the range's end). Where folders
// (sorted: common prefixes a listing by delimiter found) lie ahead, the
// pieces start at them, as many folders to a piece: real boundaries, where
// the numbering can only guess.
func (p cutPlan) cuts(s spanSample, folders []string, n int) []string {
	from := s.prefix + p.num.suffix(p.geometry(0, n+1))
	lo, _ := slices.BinarySearch(folders, from+"\x00")
	hi := len(folders)
	if s.bounded {
		hi, _ = slices.BinarySearch(folders, s.upTo)
	}
	var keys []string
	last := s.cursor
	keep := func(k string) {
		if k > last && (!s.bounded || k < s.upTo) && utf8.ValidString(k) {
			keys = append(keys, k)
			last = k
		}
	}
	if ahead := folders[lo:max(lo, hi)]; len(ahead) > 0 {
		m := min(n, len(ahead))
		for j := range m {
			keep(ahead[(j+1)*len(ahead)/(m+1)])
		}
		return keys
	}
	for j := 1; j <= n; j++ {
		// Rounded to the shortest key past the cut before it: where keys
		// are named in levels (a date, a host, a number) the cut falls
		// where a level's next name begins, not in the empty space the
		// numbering sees after the last name it knows.
		k := s.prefix + p.num.suffix(p.geometry(j, n+1))
		for i := range k {
			if i > len(s.prefix) && k[:i] > last {
				k = k[:i]
				break
			}
		}
		keep(k)
	}
	return keys
}

// trimPrefix is k after the prefix, "" for a key not under it (S3 lists
// none).
func trimPrefix(k, prefix string) string {
	if rest, ok := strings.CutPrefix(k, prefix); ok {
		return rest
	}
	return ""
}

// logInt is the natural logarithm of x > 0.
func logInt(x *big.Int) float64 {
	if x.Sign() <= 0 {
		return 0
	}
	f, _ := new(big.Float).SetInt(x).Float64()
	if !math.IsInf(f, 0) {
		return math.Log(f)
	}
	shift := x.BitLen() - 64
	top, _ := new(big.Float).SetInt(new(big.Int).Rsh(x, uint(shift))).Float64()
	return math.Log(top) + float64(shift)*math.Ln2
}

// addScaled is base + unit·e^y.
func addScaled(base, unit *big.Int, y float64) *big.Int {
	whole := math.Floor(y / math.Ln2)
	m := new(big.Float).SetPrec(128).SetFloat64(math.Exp(y - whole*math.Ln2))
	m.SetMantExp(m, int(whole))
	m.Mul(m, new(big.Float).SetPrec(128).SetInt(unit))
	v, _ := m.Int(nil)
	return v.Add(v, base)
}
