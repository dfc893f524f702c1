package plan

import (
	"archive/zip"
	"fmt"
	"io"
	"testing"

	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// virtualArchive is a plan's archive as an io.ReaderAt without holding it:
// headers and the directory are generated, every entry's data is zeros
// (whose CRC is zipformat.ZeroCRC), so multi-GiB boundary cases stay cheap.
type virtualArchive struct {
	p   *Plan
	dir []byte
}

func newVirtualArchive(t testing.TB, p *Plan) *virtualArchive {
	t.Helper()
	for i := range p.Entries {
		p.Entries[i].CRC32 = KnownCRC(zipformat.ZeroCRC(p.Entries[i].Size))
	}
	dir, err := p.Directory()
	if err != nil {
		t.Fatal(err)
	}
	return &virtualArchive{p: p, dir: dir}
}

func (v *virtualArchive) ReadAt(b []byte, off int64) (int, error) {
	if off >= v.p.Size {
		return 0, io.EOF
	}
	end := min(off+int64(len(b)), v.p.Size)
	n := 0
	var hdr []byte
	for _, s := range partwork.Segments(v.p.Entries, v.p.DirectoryOffset, off, end) {
		k := int(s.To - s.From)
		switch s.Kind {
		case partwork.SegmentHeader:
			e := &v.p.Entries[s.Entry]
			hdr = AppendLocalHeader(hdr[:0], e, e.CRC32.Sum)
			copy(b[n:n+k], hdr[s.From:s.To])
		case partwork.SegmentData:
			clear(b[n : n+k])
		case partwork.SegmentDirectory:
			copy(b[n:n+k], v.dir[s.From:s.To])
		}
		n += k
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Boundary cases named after their edge, each for every strategy: the plan
// is valid, and archive/zip finds every entry with its size, CRC-32 and
// data offset. Entries up to 64 MiB are read through (archive/zip checks
// their CRC); bigger ones are checked by header and offset.
func TestZip64Boundaries(t *testing.T) {
	const g4 = 1 << 32
	many := func(n int) []Entry {
		out := make([]Entry, n)
		for i := range out {
			out[i] = Entry{Name: fmt.Sprintf("e%06d", i), ModTime: t0}
		}
		return out
	}
	cases := []struct {
		name    string
		entries []Entry
		zip64   bool
	}{
		{"entry-4g-minus-2", sized("a", g4-2), true}, // no ZIP64 extra, but the directory starts past 4 GiB
		{"entry-4g-minus-1", sized("a", g4-1), true}, // 0xFFFFFFFF is the sentinel: ZIP64
		{"entry-exactly-4g", sized("a", g4), true},
		{"offset-crosses-4g", sized("o", g4-100, 1000, 7*MiB, 10), true},
		{"object-over-5g", sized("h", 5*GiB+12345, 3), true},
		{"entries-65534", many(65534), false},
		{"entries-65535", many(65535), true},
		{"entries-65536", many(65536), true},
	}
	for _, c := range cases {
		for _, s := range strategies {
			t.Run(c.name+"/"+string(s), func(t *testing.T) {
				p := mustPlan(t, append([]Entry(nil), c.entries...), Options{Strategy: s, Workers: 4})
				if p.Zip64 != c.zip64 {
					t.Errorf("zip64 = %v, want %v", p.Zip64, c.zip64)
				}
				for i := range p.Entries {
					e := &p.Entries[i]
					if withExtra := e.HeaderLen > int64(zipformat.LocalHeaderLen+len(e.Name)+zipformat.ExtTimeExtraLen); withExtra != (e.Size >= zipformat.Uint32Max) {
						t.Errorf("entry %q of %d bytes: ZIP64 extra in its local header = %v", e.Name, e.Size, withExtra)
					}
				}
				for _, part := range p.Parts {
					if part.Kind == PartCopy && part.Size() > MaxPartSize {
						t.Errorf("copy part %d is %d bytes", part.Number, part.Size())
					}
				}
				v := newVirtualArchive(t, p)
				zr, err := zip.NewReader(v, p.Size)
				if err != nil {
					t.Fatalf("archive/zip: %v", err)
				}
				if len(zr.File) != len(p.Entries) {
					t.Fatalf("%d entries read, planned %d", len(zr.File), len(p.Entries))
				}
				for i, f := range zr.File {
					e := &p.Entries[i]
					off, err := f.DataOffset()
					if err != nil || off != e.DataOffset() || f.Name != e.Name || int64(f.UncompressedSize64) != e.Size || f.CRC32 != e.CRC32.Sum {
						t.Fatalf("entry %d: %q size %d crc %08x at %d (%v); planned %q size %d crc %08x at %d",
							i, f.Name, f.UncompressedSize64, f.CRC32, off, err, e.Name, e.Size, e.CRC32.Sum, e.DataOffset())
					}
					if e.Size <= 64*MiB && (i < 3 || i == len(zr.File)-1) {
						rc, err := f.Open()
						if err != nil {
							t.Fatal(err)
						}
						if _, err := io.Copy(io.Discard, rc); err != nil {
							t.Fatalf("entry %q: %v", f.Name, err)
						}
					}
				}
			})
		}
	}
}
