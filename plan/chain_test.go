package plan

import (
	"slices"
	"testing"

	"github.com/s3zip/s3zip/internal/partwork"
)

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
		rounds := partwork.ChainRounds(ents, part.Start, part.End)
		early, _ := partwork.ChainChecksums(ents, rounds)
		n := partwork.ChainSteps(early)
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
