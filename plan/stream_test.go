package plan

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// withCRCs gives every entry a CRC-32 (as the workers' would be by the
// time the finalizer runs).
func withCRCs(entries []Entry) []Entry {
	for i := range entries {
		if !entries[i].CRC32.Known {
			entries[i].CRC32 = KnownCRC(crc32.ChecksumIEEE([]byte(entries[i].Name)))
		}
	}
	return entries
}

// streamDirectory makes p's directory as the finalizer does: the layout
// decoded without the entries, the entries file read an entry at a time
// into a DirectoryWriter, the final part's entries held and added last.
func streamDirectory(t *testing.T, p *Plan) ([]byte, uint32) {
	t.Helper()
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	l, err := DecodeLayout(enc.Header, bytes.NewReader(enc.Parts))
	if err != nil {
		t.Fatalf("DecodeLayout: %v", err)
	}
	var dir bytes.Buffer
	w := NewDirectoryWriter(&dir, l.DirectoryLayout())
	var final []*PlacedEntry
	entries := NewEntryReader(bytes.NewReader(enc.Entries))
	for {
		e, err := entries.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if e.Index >= FinalEntries(l.FinalParts(), l.Entries) {
			final = append(final, e)
			continue
		}
		if err := w.Add(e); err != nil {
			t.Fatalf("Add: %v", err)
		}
	}
	if entries.Read() != int64(len(enc.Entries)) {
		t.Errorf("read %d bytes of entries, the file is %d", entries.Read(), len(enc.Entries))
	}
	for _, e := range final {
		if err := w.Add(e); err != nil {
			t.Fatalf("final entry: %v", err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatalf("End: %v", err)
	}
	crc, err := w.ArchiveCRC()
	if err != nil {
		t.Fatal(err)
	}
	return dir.Bytes(), crc
}

// The central directory and archive CRC-32 the finalizer makes an entry at
// a time (DirectoryWriter) are byte for byte the plan's (Directory,
// ArchiveCRC), for ZIP64 offsets and counts, DEFLATE entries, metadata
// extras, and entries in the final part.
func TestDirectoryWriterIsTheDirectory(t *testing.T) {
	const g4 = 1 << 32
	field, err := zipformat.AppendMetadataExtra(nil, &zipformat.Metadata{ContentType: "text/html", User: map[string]string{"mode": "33261"}})
	if err != nil {
		t.Fatal(err)
	}
	withMeta := longNamed(50, 20)
	for i := range withMeta {
		if i%2 == 0 {
			withMeta[i].Mode, withMeta[i].Meta = 0o755, MetaField(field)
		}
	}
	many := make([]Entry, 65536)
	for i := range many {
		many[i] = Entry{Name: fmt.Sprintf("e%06d", i), ModTime: t0}
	}
	for _, tc := range []struct {
		name    string
		entries []Entry
		opts    Options
	}{
		{"zip64-offset", sized("o", g4-100, 1000, 7*MiB, 10), Options{Strategy: StrategyDuo}},
		{"zip64-entry-over-4g", sized("a", g4+5, 3), Options{Strategy: StrategyChain}},
		{"zip64-entries-65536", many, Options{Strategy: StrategyStream}},
		{"deflate", compressedLayout(7, 40), Options{Strategy: StrategyAuto, Workers: 4}},
		{"metadata", withMeta, Options{Strategy: StrategyStream}},
		{"all-in-final-part", sized("s", 10, 0, 3000), Options{Strategy: StrategyStream}},
		{"final-part-after-workers", sized("f", 8*MiB, 8*MiB, MiB), Options{Strategy: StrategyDuo}},
		{"directory-only-final-part", sized("d", 17*MiB, 100, 200), Options{Strategy: StrategyStream}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlan(t, withCRCs(tc.entries), tc.opts)
			want, err := p.Directory()
			if err != nil {
				t.Fatal(err)
			}
			wantCRC, err := p.ArchiveCRC(want)
			if err != nil {
				t.Fatal(err)
			}
			got, gotCRC := streamDirectory(t, p)
			if !bytes.Equal(got, want) {
				t.Errorf("streamed directory is %d bytes, differs from the plan's %d", len(got), len(want))
			}
			if gotCRC != wantCRC {
				t.Errorf("streamed archive CRC-32 %08x, the plan's %08x", gotCRC, wantCRC)
			}
			if strings.HasPrefix(tc.name, "zip64") && !p.Zip64 || strings.HasPrefix(tc.name, "final-part") && (p.FinalPart().Count == 0 || len(p.WorkerParts()) == 0) {
				t.Fatalf("the plan is not the case it names: zip64 %v, %d worker parts, %d entries in the final part", p.Zip64, len(p.WorkerParts()), p.FinalPart().Count)
			}
		})
	}
}

// The writer refuses what would make a wrong directory: an entry without
// its CRC-32, one out of place, fewer entries than planned.
func TestDirectoryWriterRefuses(t *testing.T) {
	p := mustPlan(t, withCRCs(sized("r", 10, 20, 30)), Options{Strategy: StrategyStream})
	add := func(entries []PlacedEntry) error {
		w := NewDirectoryWriter(&bytes.Buffer{}, p.DirectoryLayout())
		for i := range entries {
			if err := w.Add(&entries[i]); err != nil {
				return err
			}
		}
		return w.End()
	}
	unknown := clonePlaced(p.Entries)
	unknown[1].CRC32 = CRC{}
	var crcErr *UnknownCRCError
	if err := add(unknown); !errors.As(err, &crcErr) {
		t.Errorf("an entry without its CRC-32: %v, want UnknownCRCError", err)
	}
	var invalid *InvalidPlanError
	if err := add([]PlacedEntry{p.Entries[0], p.Entries[2]}); !errors.As(err, &invalid) || !strings.Contains(err.Error(), "has index 2") {
		t.Errorf("an entry skipped: %v, want InvalidPlanError naming the index", err)
	}
	if err := add(p.Entries[:2]); !errors.As(err, &invalid) {
		t.Errorf("an entry short: %v, want InvalidPlanError", err)
	}
}

// clonePlaced copies entries with their Entry, so that changing one
// changes no plan.
func clonePlaced(entries []PlacedEntry) []PlacedEntry {
	out := make([]PlacedEntry, len(entries))
	for i, e := range entries {
		inner := *e.Entry
		e.Entry = &inner
		out[i] = e
	}
	return out
}
