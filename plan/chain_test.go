package plan

import (
	"fmt"
	"slices"
	"testing"
	"time"

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

// TestCoalesceKeepsDirectoryParts: the two-level assembly merges the
// workers' parts into chains to fit S3's 10,000 parts, and leaves the
// finalizer's directory parts as they are, counting them in the limit.
func TestCoalesceKeepsDirectoryParts(t *testing.T) {
	var parts []Part
	pos := int64(0)
	for range MaxParts {
		parts = append(parts, Part{Kind: PartUpload, Start: pos, End: pos + MinPartSize})
		pos += MinPartSize
	}
	for _, size := range []int64{8 * MiB, 8 * MiB, 100} {
		parts = append(parts, Part{Kind: PartUpload, Start: pos, End: pos + size, Final: true})
		pos += size
	}
	out := coalesce(parts)
	if len(out) > MaxParts {
		t.Fatalf("coalesced to %d parts, over %d", len(out), MaxParts)
	}
	finals := out[firstFinal(out):]
	if len(finals) != 3 || finals[0].Start != MaxParts*MinPartSize || finals[2].End != pos {
		t.Fatalf("final parts after coalescing: %+v, want the 3 directory parts unchanged", finals)
	}
	for _, f := range finals {
		if f.Kind != PartUpload || !f.Final {
			t.Fatalf("final part %+v became a %s part", f, f.Kind)
		}
	}
}

// Two-level assembly lifts the 10,000-part limit: chain (and auto) plan
// 50,000 objects of at least 5 MiB, and 1,000,000 entries, within it.
func TestTwoLevelAssembly(t *testing.T) {
	bigs := make([]Entry, 50000)
	for i := range bigs {
		bigs[i] = obj(fmt.Sprintf("big/%05d", i), 5*MiB+int64(i%997)*4096)
	}
	tiny := make([]Entry, 1_000_000)
	for i := range tiny {
		tiny[i] = obj(fmt.Sprintf("tiny/%07d", i), int64(i%2000))
	}
	for _, c := range []struct {
		name    string
		entries []Entry
	}{{"50000-objects-of-5MiB-or-more", bigs}, {"1000000-entries", tiny}} {
		if _, err := Make(c.entries, Options{Strategy: StrategyDuo}); err == nil && c.name[0] == '5' {
			t.Errorf("%s: duo fits in one level; the case no longer tests two levels", c.name)
		}
		for _, s := range []Strategy{StrategyChain, StrategyAuto} {
			start := time.Now()
			p := mustPlan(t, c.entries, Options{Strategy: s, Workers: 100})
			st := p.Stats()
			t.Logf("%s/%s: %d parts (%d chain), %d rounds, %.2f× copied server-side, planned in %v",
				c.name, s, st.Parts, st.ChainParts, st.ChainRounds, float64(st.ServerCopiedBytes)/float64(st.ArchiveBytes), time.Since(start).Round(time.Millisecond))
			if st.Parts > MaxParts {
				t.Errorf("%s/%s: %d parts", c.name, s, st.Parts)
			}
		}
	}
}

// Chain streams nothing but headers, also when no object is 5 MiB or more
// (the pad anchors every chain), and copies objects over 5 GiB in ranges.
func TestChainWithoutBigObjectsAndWithHugeOnes(t *testing.T) {
	small := sized("s", 3*MiB, 2*MiB, 4*MiB, 1*MiB, 3*MiB)
	huge := sized("h", 11*GiB, 2*MiB, 6*MiB)
	for name, entries := range map[string][]Entry{"no-object-of-5MiB": small, "object-of-11GiB": huge} {
		p := mustPlan(t, entries, Options{Strategy: StrategyChain})
		st := p.Stats()
		if st.StreamedFraction() > 0.01 {
			t.Errorf("%s: chain streams %.2f%%", name, 100*st.StreamedFraction())
		}
		for _, part := range p.Parts {
			if part.Kind == PartChain {
				for _, r := range partwork.ChainRounds(p.Entries[part.First:part.First+EntryIndex(part.Count)], part.Start, part.End) {
					for _, pc := range append(r.Middle, r.Last) {
						if pc.Size > MaxPartSize {
							t.Errorf("%s: a chain piece of %d bytes", name, pc.Size)
						}
					}
				}
			}
		}
	}
}

// On the challenge set chain moves under 1% of the archive through workers
// and copies fewer bytes server-side than the published chain design
// (3.6× the archive), with fewer requests than its about 22,500: the HEADs
// are what chains and carried copies learn from S3's answers to copies.
func TestChainChallenge(t *testing.T) {
	p := mustPlan(t, Challenge(3000, 1), Options{Strategy: StrategyChain})
	st := p.Stats()
	copied := float64(st.ServerCopiedBytes) / float64(st.ArchiveBytes)
	t.Logf("chain: streamed %.4f%%, server copies %.2f× the archive, %d requests %+v (published: ~22,500 requests, 3.6×)",
		100*st.StreamedFraction(), copied, st.Requests.Total(), st.Requests)
	if st.StreamedFraction() > 0.01 || copied >= 3.6 {
		t.Errorf("chain streams %.2f%% and copies %.2f× the archive; want ≤ 1%% and < 3.6×", 100*st.StreamedFraction(), copied)
	}
	// Chains now delete each round object as soon as it is consumed (issue
	// 10): one free DeleteObject per round, on no round's path, that the
	// published design does not make. Billed requests are compared.
	if n := st.Requests.Billed(); n >= 22500 {
		t.Errorf("chain makes %d billed requests, want fewer than the published design's about 22,500", n)
	}
}
