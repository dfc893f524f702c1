package plan

import (
	"slices"
	"testing"
)

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

// A plan's stats carry the steps of its chains: the sum, and the longest
// chain's, which bounds the run however many workers build the others.
func TestStatsCountChainSteps(t *testing.T) {
	p := mustPlan(t, Challenge(60, 1), Options{Strategy: StrategyChain})
	st := p.Stats()
	var sum, longest int
	for i := range p.Parts {
		part := &p.Parts[i]
		if part.Kind != PartChain {
			continue
		}
		ents := p.Entries[part.First : part.First+EntryIndex(part.Count)]
		rounds := ChainRounds(ents, part.Start, part.End)
		early, _ := ChainChecksums(ents, rounds)
		n := ChainSteps(early)
		if slices.ContainsFunc(part.NeedCRC, func(i EntryIndex) bool { return !p.Entries[i].CRC32.Known }) {
			n++ // its worker asks for them before its first round
		}
		sum, longest = sum+n, max(longest, n)
		if n < 2+2*len(rounds) || n > 4+3*len(rounds) {
			t.Errorf("part %d: %d rounds in %d steps", part.Number, len(rounds), n)
		}
	}
	if st.ChainParts == 0 || st.ChainSteps != sum || st.LongestChainSteps != longest {
		t.Errorf("stats: %d chain parts, %d steps, longest %d; the parts: %d steps, longest %d", st.ChainParts, st.ChainSteps, st.LongestChainSteps, sum, longest)
	}
}
