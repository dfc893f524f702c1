package plan

import (
	"math/big"
	"testing"
)

// TestCutPartsTerabytesInMillionsOfParts guards the cut of a chained run of
// terabytes into parts of MinPartSize: size·k overflowed int64 past ~1.4 M
// entries of the challenge set (7.8 TB), giving parts with negative ends
// that describe then sliced backwards (a panic in plan).
func TestCutPartsTerabytesInMillionsOfParts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start int64
		size  int64
	}{
		{"challenge-1.5M-chain-run", 3_500_000, 7_864_473_583_609},
		{"48TiB-object-limit", 0, 48 << 40},
		{"odd-remainder", 1, 10_000*MinPartSize + 9_999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{PartSize: MinPartSize, Workers: 100}
			parts := cutParts(PartChain, tc.start, tc.start+tc.size, opts)
			pos := tc.start
			for i, p := range parts {
				if p.Start != pos || p.End <= p.Start {
					t.Fatalf("part %d of %d is [%d, %d), want it to start at %d and be non-empty", i, len(parts), p.Start, p.End, pos)
				}
				if n := p.End - p.Start; n < MinPartSize || n > MaxPartSize {
					t.Fatalf("part %d of %d has %d bytes, outside [%d, %d]", i, len(parts), n, MinPartSize, MaxPartSize)
				}
				pos = p.End
			}
			if pos != tc.start+tc.size {
				t.Fatalf("parts end at %d, want %d", pos, tc.start+tc.size)
			}
			copies := (&Plan{}).copyParts(span{start: tc.start, end: tc.start + tc.size, copy: true})
			if last := copies[len(copies)-1]; copies[0].Start != tc.start || last.End != tc.start+tc.size {
				t.Fatalf("copy parts cover [%d, %d), want [%d, %d)", copies[0].Start, last.End, tc.start, tc.start+tc.size)
			}
		})
	}
}

// TestShareIsExactFloor checks share against arbitrary-precision arithmetic
// where size·k does not fit in 64 bits.
func TestShareIsExactFloor(t *testing.T) {
	sizes := []int64{0, 1, 5 << 20, 7_864_473_583_609, 48 << 40, 1<<62 + 12345}
	counts := []int64{1, 2, 3, 9_999, 1_494_540, 1 << 30}
	for _, size := range sizes {
		for _, n := range counts {
			for _, k := range []int64{0, 1, n / 3, n / 2, n - 1, n} {
				want := new(big.Int).Mul(big.NewInt(size), big.NewInt(k))
				want.Quo(want, big.NewInt(n))
				if got := share(size, k, n); got != want.Int64() {
					t.Fatalf("share(%d, %d, %d) = %d, want %d", size, k, n, got, want)
				}
			}
		}
	}
}
