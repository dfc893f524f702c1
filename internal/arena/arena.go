// Package arena stores many small strings one after another in large
// blocks: a planner of ten million entries keeps ten million keys, and as
// strings of their own each costs an allocation rounded up to its size
// class and an object the garbage collector visits; in an arena it costs
// its bytes.
package arena

import "strings"

// BlockSize is the size of an arena's blocks: big enough that a block's
// allocation is rare, small enough that the last block's unused tail is
// nothing beside millions of keys.
const BlockSize = 1 << 20

// Strings is an arena of strings. The zero value is ready to use. Strings
// it returns stay valid (and keep their block alive) after the arena is
// dropped.
type Strings struct {
	block strings.Builder
}

// Reserve makes room for n bytes in the block being filled, in a block
// of just n bytes when it has not: what stores a known batch (a listed
// page's keys) without the unused tail of a BlockSize block.
func (a *Strings) Reserve(n int) {
	if a.block.Cap()-a.block.Len() < n {
		a.block.Reset()
		a.block.Grow(n)
	}
}

// Join stores the concatenation of parts and returns it: one key made
// from a prefix and a name, or a key and its ETag side by side.
func (a *Strings) Join(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		return ""
	}
	if a.block.Cap()-a.block.Len() < n {
		// A new block; strings made from the old one keep it.
		a.block.Reset()
		a.block.Grow(max(BlockSize, n))
	}
	start := a.block.Len()
	for _, p := range parts {
		a.block.WriteString(p)
	}
	return a.block.String()[start:]
}

// Bytes stores b and returns it as a string.
func (a *Strings) Bytes(b []byte) string {
	if a.block.Cap()-a.block.Len() < len(b) {
		a.block.Reset()
		a.block.Grow(max(BlockSize, len(b)))
	}
	start := a.block.Len()
	a.block.Write(b)
	return a.block.String()[start:]
}
