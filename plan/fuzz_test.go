package plan

import (
	"errors"
	"fmt"
	"testing"
	"unicode/utf8"
)

// FuzzPlan: any names and sizes either are refused with a name, duplicate
// or input error, or give, for every strategy, a valid plan that archive/zip
// reads back byte for byte.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{1, 2, 3}, "a/b.txt\x00c.txt\x00d/")
	f.Add([]byte{80, 0, 200, 90}, "x\x00y\x00z\x00w")
	f.Add([]byte{255, 255, 1}, "ü/ñ\x00../a\x00b")
	f.Fuzz(func(t *testing.T, sizes []byte, names string) {
		if len(sizes) > 8 {
			sizes = sizes[:8]
		}
		var entries []Entry
		for i, b := range sizes {
			name := fmt.Sprintf("f%d", i)
			if parts := splitNUL(names); i < len(parts) && parts[i] != "" {
				name = parts[i]
			}
			// Sizes in 48 KiB steps up to ~12 MiB: small, big and in between.
			e := obj(name, int64(b)*48<<10+int64(b%7))
			if e.Dir = len(name) > 0 && name[len(name)-1] == '/'; e.Dir {
				e.Size = 0
			}
			entries = append(entries, e)
		}
		for _, s := range strategies {
			p, err := Make(append([]Entry(nil), entries...), Options{Strategy: s, Workers: 3})
			if err != nil {
				var ne *NameError
				var de *DuplicateError
				var ie *InputError
				if errors.As(err, &ne) || errors.As(err, &de) || errors.As(err, &ie) {
					continue
				}
				t.Fatalf("%s: %v", s, err)
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			for _, e := range p.Entries {
				if !utf8.ValidString(e.Name) {
					t.Fatalf("%s: invalid UTF-8 name %q accepted", s, e.Name)
				}
			}
			checkZip(t, execute(t, p), entries)
		}
	})
}

func splitNUL(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
