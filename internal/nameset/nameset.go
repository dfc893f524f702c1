// Package nameset finds equal names among millions of entries without a
// map from name to entry.
//
// A map[string]int holds a string header, an int and its control bytes a
// name, and doubles as it grows: about 40 bytes an entry, half a gigabyte at
// ten million. A Set holds 8 bytes a slot, at most 3/4 of them in use — an
// entry number and 32 bits of its name's hash — and reads names through the
// caller, which keeps them anyway. Open addressing, linear probing; names
// are compared only when their hash bits agree.
package nameset

import (
	"fmt"
	"hash/maphash"
	"math"
)

// MaxLen is the most entries a Set holds: entry numbers are 32 bits.
const MaxLen = math.MaxUint32 - 1

// Set is a set of entries by name. name(i) is entry i's name in the form
// names are compared in (the identity, or a Unicode normalization).
type Set struct {
	slots []uint64 // hash<<32 | entry+1; 0 is empty
	mask  uint64
	seed  maphash.Seed
	name  func(i int) string
	len   int
}

// New makes a set for up to n entries.
func New(n int, name func(i int) string) *Set {
	if n > MaxLen {
		panic(fmt.Sprintf("nameset: %d entries, at most %d", n, MaxLen)) // callers check MaxLen first
	}
	size := uint64(8)
	for size*3/4 < uint64(n) {
		size *= 2
	}
	return &Set{slots: make([]uint64, size), mask: size - 1, seed: maphash.MakeSeed(), name: name}
}

// find returns the slot of the entry named s, or of the empty slot where it
// would go, and whether it is there.
func (t *Set) find(s string) (slot uint64, hash uint64, found bool) {
	h := maphash.String(t.seed, s)
	hash = h >> 32
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		v := t.slots[i]
		if v == 0 {
			return i, hash, false
		}
		if v>>32 == hash && t.name(int(v&math.MaxUint32)-1) == s {
			return i, hash, true
		}
	}
}

// Find returns the entry named s, or -1.
func (t *Set) Find(s string) int {
	i, _, ok := t.find(s)
	if !ok {
		return -1
	}
	return int(t.slots[i]&math.MaxUint32) - 1
}

// Add adds entry i, unless an entry of the same name is in the set: then it
// returns that entry and adds nothing; otherwise -1.
func (t *Set) Add(i int) int {
	slot, hash, ok := t.find(t.name(i))
	if ok {
		return int(t.slots[slot]&math.MaxUint32) - 1
	}
	if (t.len+1)*4 > len(t.slots)*3 {
		panic(fmt.Sprintf("nameset: more than the %d entries the set was made for", len(t.slots)*3/4)) // a caller's bug
	}
	t.slots[slot] = hash<<32 | uint64(i+1)
	t.len++
	return -1
}
