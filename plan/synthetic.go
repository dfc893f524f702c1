package plan

import (
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// SyntheticBucket is the bucket named by synthetic entries.
const SyntheticBucket = "challenge"

// Challenge returns the reference challenge's data set: count objects whose
// sizes are drawn from a normal distribution around the remaining average
// (5 MiB per object overall), standard deviation 1 MiB, clamped to ±3 MiB of
// that average and to at least 512 KiB; keys are 64 hex characters. The same
// seed gives the same set.
func Challenge(count int, seed uint64) []Entry {
	rng := rand.New(rand.NewPCG(seed, 0x73337a6970))
	remaining := int64(count) * 5 * MiB
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Entry, count)
	key := make([]byte, 32)
	for i := range out {
		mean := remaining / int64(count-i)
		size := mean + int64(rng.NormFloat64()*MiB)
		size = min(max(size, mean-3*MiB), mean+3*MiB)
		size = max(size, 512*1024)
		remaining -= size
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		k := hex.EncodeToString(key)
		out[i] = Entry{
			Name:    k,
			Source:  Source{Bucket: SyntheticBucket, Key: k},
			Size:    size,
			ModTime: base.Add(time.Duration(i) * time.Second),
		}
	}
	return out
}
