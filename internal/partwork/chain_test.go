package partwork

import "testing"

// ChainSteps counts the round trips create/worker_chain.go waits for one after
// another: the GET of the part's entries and the copy of the product into
// the archive; the first round's Create (skipped when it is opened early);
// two per round (the copy of what is built, beside the first round's own
// copies and header uploads; Complete), the next round's Create, copies and
// header uploads made meanwhile; all early rounds open side by side first
// (Create, copies).
func TestChainSteps(t *testing.T) {
	cases := []struct {
		name  string
		early []bool
		want  int
	}{
		{"one plain round", []bool{false}, 2 + 1 + 2},
		{"three plain rounds", []bool{false, false, false}, 2 + 1 + 3*2},
		{"one early round of three", []bool{true, false, false}, 2 + 2 + 3*2},
		{"every other round early", []bool{true, false, true, false, false}, 2 + 2 + 5*2},
		{"the second round early", []bool{false, true}, 2 + 2 + 1 + 2*2},
	}
	for _, c := range cases {
		if got := ChainSteps(c.early); got != c.want {
			t.Errorf("%s: ChainSteps(%v) = %d, want %d", c.name, c.early, got, c.want)
		}
	}
}
