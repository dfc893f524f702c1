package arena

import (
	"strings"
	"testing"
)

// Strings made from a block stay what they were when later ones fill it
// and when the arena moves to a new block.
func TestStringsStayAcrossBlocks(t *testing.T) {
	var a Strings
	var made, want []string
	for i := 0; i < 3*BlockSize/100; i++ {
		s := strings.Repeat(string(rune('a'+i%26)), 1+i%150)
		made, want = append(made, a.Join("k/", s)), append(want, "k/"+s)
	}
	made, want = append(made, a.Bytes([]byte(strings.Repeat("z", BlockSize+1)))), append(want, strings.Repeat("z", BlockSize+1))
	for i := range made {
		if made[i] != want[i] {
			t.Fatalf("string %d is %.20q…, want %.20q…", i, made[i], want[i])
		}
	}
	if a.Join() != "" || a.Join("", "") != "" {
		t.Error("joining nothing is not the empty string")
	}
}

// A string costs its bytes: a hundred thousand keys are a few block
// allocations, not one each.
func TestStringsAllocateByBlock(t *testing.T) {
	var a Strings
	allocs := testing.AllocsPerRun(1, func() {
		for i := 0; i < 100_000; i++ {
			a.Join("logs/host-001/2025/01/01/", "00000001.log")
		}
	})
	if allocs > 10 {
		t.Errorf("100,000 keys of 37 bytes made %.0f allocations, want a block's every %d bytes", allocs, BlockSize)
	}
}
