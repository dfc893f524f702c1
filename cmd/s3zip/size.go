package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag holding a size in bytes, typed as people type sizes:
// 4096, 16MiB, 1.5GiB, 500MB, 64k. Binary units (KiB, MiB, GiB, TiB, and
// K, M, G, T alone, as dd and most tools read them) are powers of 1,024;
// decimal ones (KB, MB, GB, TB) powers of 1,000, as S3's console and the
// SI write them. Case is ignored and a space may come before the unit.
type byteSize struct{ p *int64 }

// sizeFlag defines a size flag with usage (whose `bytes` names its value).
func sizeFlag(fs *flags, name string, usage string) *int64 {
	p := new(int64)
	fs.Var(byteSize{p}, name, usage)
	return p
}

func (b byteSize) String() string {
	if b.p == nil {
		return "0"
	}
	return strconv.FormatInt(*b.p, 10)
}

func (b byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b.p = n
	return nil
}

// sizeUnits are the units parseSize reads, lower-case.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// parseSize reads a size in bytes: a whole number of bytes, or a number
// (a fraction allowed) and a unit; the bytes it makes must be whole.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' && r != '+' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size: want bytes (16777216) or a number and a unit (16MiB, 1.5GiB, 500MB, 64k)", s)
	}
	bytes := v * mult
	if bytes != math.Trunc(bytes) || math.Abs(bytes) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return int64(bytes), nil
}
