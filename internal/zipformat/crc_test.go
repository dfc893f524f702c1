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
