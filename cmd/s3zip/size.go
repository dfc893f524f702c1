package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteSize is a flag holding a size in bytes, typed as people type sizes,
// such as 4096, 16MiB, 1.5GiB, 500MB or 64k. The binary units KiB, MiB, GiB
// and TiB, and K, M, G and T alone as dd and most tools read them, are
// powers of 1,024. The decimal units KB, MB, GB and TB are powers of 1,000,
// as S3's console and the SI write them. Case is ignored and a space may
// come before the unit.
type byteSize struct{ p *int64 }

// sizeFlag defines a size flag with its default and usage, whose `size`
// names its value. Every size flag of every command is one, so a number
// alone is bytes everywhere.
func sizeFlag(fs *flags, name string, def int64, usage string) *int64 {
	p := new(int64)
	*p = def
	fs.Var(byteSize{p}, name, usage)
	return p
}

// String returns the size as a user would type it, such as 32MiB, or bytes
// when no binary unit holds it whole.
func (b byteSize) String() string {
	if b.p == nil {
		return "0"
	}
	return sizeText(*b.p)
}

// sizeText returns n as the size flags take it, in the largest binary unit
// that holds it whole, such as 32MiB or 1536KiB, else in bytes.
func sizeText(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizeOutOfRange says what is wrong with --name n outside least to most, or
// returns "" when n is within. A small number alone was probably meant in
// MiB, as s5cmd and other tools read it, so the message says how to write
// that.
func sizeOutOfRange(name string, n, least, most int64) string {
	if n >= least && n <= most {
		return ""
	}
	msg := fmt.Sprintf("--%s %d: want %s to %s (%d to %d bytes)", name, n, sizeText(least), sizeText(most), least, most)
	if mib := n << 20; n > 0 && n < least && mib >= least && mib <= most {
		msg += fmt.Sprintf("; a number alone is bytes: for %d mebibytes write %dMiB", n, n)
	}
	return msg
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

// parseSize reads a size in bytes, given as a whole number of bytes or as a
// number and a unit. The number may have a fraction, but the bytes it makes
// must be whole.
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
