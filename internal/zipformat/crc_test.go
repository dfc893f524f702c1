package zipformat

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCombineCRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<16)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	cases := []struct {
		name string
		a, b int
	}{
		{"both-empty", 0, 0}, {"empty-b", 100, 0}, {"empty-a", 0, 100},
		{"one-byte-each", 1, 1}, {"uneven", 1000, 7}, {"large-b", 3, 60000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := buf[:c.a], buf[c.a:c.a+c.b]
			want := crc32.ChecksumIEEE(buf[:c.a+c.b])
			got := CombineCRC(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
			if got != want {
				t.Fatalf("CombineCRC = %08x, want %08x", got, want)
			}
		})
	}
	for i := 0; i < 200; i++ {
		n := rng.IntN(len(buf))
		k := rng.IntN(n + 1)
		want := crc32.ChecksumIEEE(buf[:n])
		if got := CombineCRC(crc32.ChecksumIEEE(buf[:k]), crc32.ChecksumIEEE(buf[k:n]), int64(n-k)); got != want {
			t.Fatalf("split %d/%d: %08x, want %08x", k, n, got, want)
		}
	}
}

func TestZeroCRC(t *testing.T) {
	for _, n := range []int{0, 1, 2, 31, 4096, 1 << 20} {
		if got, want := ZeroCRC(int64(n)), crc32.ChecksumIEEE(make([]byte, n)); got != want {
			t.Errorf("ZeroCRC(%d) = %08x, want %08x", n, got, want)
		}
	}
}

// SplitCRC undoes CombineCRC: the start's CRC-32 from the whole's and the
// rest's, for the boundary cases and random splits, and for a rest far
// longer than any buffer (a 5 GiB copy: the inverse's powers by squaring).
func TestSplitCRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 1<<16)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for _, c := range []struct {
		name string
		a, b int
	}{{"both-empty", 0, 0}, {"empty-rest", 100, 0}, {"empty-start", 0, 100}, {"one-byte-each", 1, 1}, {"uneven", 1000, 7}, {"long-rest", 3, 60000}} {
		a, b := buf[:c.a], buf[c.a:c.a+c.b]
		if got, want := SplitCRC(crc32.ChecksumIEEE(buf[:c.a+c.b]), crc32.ChecksumIEEE(b), int64(len(b))), crc32.ChecksumIEEE(a); got != want {
			t.Errorf("%s: SplitCRC = %08x, want %08x", c.name, got, want)
		}
	}
	for i := 0; i < 200; i++ {
		n := rng.IntN(len(buf))
		k := rng.IntN(n + 1)
		if got, want := SplitCRC(crc32.ChecksumIEEE(buf[:n]), crc32.ChecksumIEEE(buf[k:n]), int64(n-k)), crc32.ChecksumIEEE(buf[:k]); got != want {
			t.Fatalf("split %d/%d: %08x, want %08x", k, n, got, want)
		}
	}
	start, rest, restLen := uint32(0x12345678), ZeroCRC(5<<30), int64(5<<30)
	if got := SplitCRC(CombineCRC(start, rest, restLen), rest, restLen); got != start {
		t.Errorf("5 GiB rest: SplitCRC = %08x, want %08x", got, start)
	}
}
