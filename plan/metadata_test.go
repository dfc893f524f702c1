package plan

import (
	"archive/zip"
	"bytes"
	"testing"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// Entries carrying a mode and a metadata extra field: the directory's size
// is planned with the fields, both survive the plan's encoding, and
// archive/zip reads the archive (mode, the field among the extras) as any.
func TestMetadataInTheDirectory(t *testing.T) {
	entries := longNamed(50, 20)
	field, err := zipformat.AppendMetadataExtra(nil, &zipformat.Metadata{ContentType: "text/html", User: map[string]string{"mode": "33261"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if i%2 == 0 {
			entries[i].Mode, entries[i].Meta = 0o755, MetaField(field)
		}
	}
	plain := mustPlan(t, longNamed(50, 20), Options{Strategy: StrategyStream})
	for _, s := range []Strategy{StrategyStream, StrategyChain} {
		p := mustPlan(t, entries, Options{Strategy: s})
		if got, want := p.DirectorySize-plain.DirectorySize, int64(25*len(field)); got != want {
			t.Errorf("%s: the fields add %d bytes to the directory, want %d", s, got, want)
		}
		enc, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(enc.Header, bytes.NewReader(enc.Entries), bytes.NewReader(enc.Parts))
		if err != nil {
			t.Fatal(err)
		}
		out := execute(t, back)
		zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range zr.File {
			kept := i%2 == 0
			if want := map[bool]uint32{true: 0o755, false: 0o644}[kept]; uint32(f.Mode().Perm()) != want {
				t.Errorf("%s: %s: mode %v, want %#o", s, f.Name, f.Mode(), want)
			}
			if bytes.Contains(f.Extra, field) != kept {
				t.Errorf("%s: %s: extra %x: holds the metadata field %v, want %v", s, f.Name, f.Extra, !kept, kept)
			}
		}
	}
}
