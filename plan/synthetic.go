package plan

import (
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/s3zip/s3zip/internal/arena"
)

// SyntheticBucket is the bucket named by synthetic entries.
const SyntheticBucket = "challenge"

// Challenge returns the reference challenge's data set of count objects.
// Sizes are drawn from a normal distribution around the remaining average,
// 5 MiB per object overall, with a standard deviation of 1 MiB, clamped to
// ±3 MiB of that average and to at least 512 KiB. Keys are 64 hex
// characters. The same seed gives the same set.
func Challenge(count int, seed uint64) []Entry {
	rng := rand.New(rand.NewPCG(seed, 0x73337a6970))
	remaining := int64(count) * 5 * MiB
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Entry, count)
	key, hexKey := make([]byte, 32), make([]byte, 0, 64)
	var keys arena.Strings
	for i := range out {
		mean := remaining / int64(count-i)
		size := mean + int64(rng.NormFloat64()*MiB)
		size = min(max(size, mean-3*MiB), mean+3*MiB)
		size = max(size, 512*1024)
		remaining -= size
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		hexKey = hex.AppendEncode(hexKey[:0], key)
		k := keys.Bytes(hexKey)
		out[i] = Entry{
			Name:    k,
			Source:  Source{Bucket: SyntheticBucket, Key: k},
			Size:    size,
			ModTime: base.Add(time.Duration(i) * time.Second),
		}
	}
	return out
}

// SyntheticSets names the synthetic data sets, for help and errors.
const SyntheticSets = `"challenge" or "small"`

// Synthetic returns the named synthetic data set, or false when there is
// none of that name.
func Synthetic(name string, count int, seed uint64) ([]Entry, bool) {
	switch name {
	case "challenge":
		return Challenge(count, seed), true
	case "small":
		return small(count, seed), true
	}
	return nil, false
}

// small returns the data set of the millions-of-objects case, count log
// files. Sizes are drawn from a log-normal distribution with a median of
// 4 KiB and σ = 1, so a tenth are under 1.1 KiB and a tenth over 14.7 KiB,
// clamped to 1 B–64 MiB. Keys are shaped like a log bucket's,
// logs/host-NNN/YYYY/MM/DD/NNNNNNNN.log, with 1,000 hosts and a day per
// 10,000 objects a host. Every third object has no stored CRC-32; the
// others' CRC-32s are unknown too, as listing returns no checksum values.
// The same seed gives the same set.
func small(count int, seed uint64) []Entry {
	rng := rand.New(rand.NewPCG(seed, 0x736d616c6c))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Entry, count)
	var keys arena.Strings
	var b []byte
	for i := range out {
		size := int64(math.Exp(math.Log(4096) + rng.NormFloat64()))
		size = min(max(size, 1), 64*MiB)
		host, n := i%1000, i/1000
		day := base.AddDate(0, 0, n/10_000)
		// logs/host-HHH/YYYY/MM/DD/NNNNNNNN.log, built in the arena, since a
		// string each from fmt is a tenth of the plan's memory at ten million entries.
		b = append(b[:0], "logs/host-"...)
		b = appendPadded(b, host, 3)
		b = appendPadded(append(b, '/'), day.Year(), 4)
		b = appendPadded(append(b, '/'), int(day.Month()), 2)
		b = appendPadded(append(b, '/'), day.Day(), 2)
		b = appendPadded(append(b, '/'), n, 8)
		k := keys.Bytes(append(b, ".log"...))
		out[i] = Entry{
			Name:    k[len("logs/"):],
			Source:  Source{Bucket: SyntheticBucket, Key: k},
			Size:    size,
			ModTime: base.Add(time.Duration(i) * time.Second),
		}
	}
	return out
}

// appendPadded appends v in decimal, zero-padded to width digits as fmt's %0*d.
func appendPadded(b []byte, v, width int) []byte {
	d := 1
	for x := v; x >= 10; x /= 10 {
		d++
	}
	for ; d < width; d++ {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(v), 10)
}
