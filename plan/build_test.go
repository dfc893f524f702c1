package plan

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/partwork"
)

// content is a cheap deterministic stand-in for an object's bytes.
func content(key string, from, to int64, dst []byte) {
	h := fnv.New64a()
	h.Write([]byte(key))
	seed := h.Sum64()
	for i := from; i < to; i++ {
		dst[i-from] = byte(seed>>(8*(i%8))) ^ byte(i) ^ byte(i>>9)
	}
}

func contentCRC(e *Entry) uint32 {
	buf := make([]byte, e.Size)
	content(e.Source.Key, 0, e.Size, buf)
	return crc32.ChecksumIEEE(buf)
}

// execute runs a plan in memory the way the workflow does: workers build
// their parts knowing only the plan's CRCs (after the planner filled in the
// ones CRCsNeeded asks for), those S3's answers to their copies give them
// (a carried copy, the whole-object copies of a chain's checksummed rounds)
// and those a chain part's worker asks for (its NeedCRC);
// copies are taken from the sources; the finalizer merges the CRCs the
// workers computed or learned and builds the last part.
func execute(t testing.TB, p *Plan) []byte {
	t.Helper()
	// The planner learns what CRCsNeeded asks for, except for copied tails:
	// here S3 stores no CRC-32, so the worker combines those.
	tails := p.CopiedTails()
	for _, i := range p.CRCsNeeded() {
		if !tails[i] {
			p.Entries[i].CRC32 = KnownCRC(contentCRC(p.Entries[i].Entry))
		}
	}
	readAll := func(reads []DataRead) error {
		for _, r := range reads {
			content(r.Entry.Source.Key, r.From, r.To, r.Dst)
		}
		return nil
	}
	parts := make([][]byte, len(p.Parts))
	computed := map[EntryIndex]uint32{}
	// learn is what S3 answers a copy of a whole object into an upload created with CRC-32.
	learn := func(ents []PlacedEntry, k int) {
		crc := contentCRC(ents[k].Entry)
		ents[k].CRC32 = KnownCRC(crc)
		computed[ents[k].Index] = crc
	}
	for i := range p.WorkerParts() {
		part := &p.Parts[i]
		// A part's worker sees only its own entries and what it learns.
		ents := slices.Clone(p.Entries[part.First : part.First+EntryIndex(part.Count)])
		var tail map[EntryIndex]Tail
		if part.Carry > 0 {
			next := &p.Parts[i+1]
			e := &p.Entries[next.First]
			k := int(next.First - part.First) // its position among the part's entries
			switch {
			case k < 0 || k >= len(ents):
				t.Fatalf("part %d carries part %d, whose entry it does not hold", part.Number, next.Number)
			case next.CarriedAs == CarriedWhole:
				learn(ents, k)
			case next.CarriedAs == CarriedTail && !e.CRC32.Known:
				// S3's answer to the ranged copy: the CRC-32 of the rest.
				buf := make([]byte, next.Size())
				content(e.Source.Key, next.Start-e.DataOffset(), e.Size, buf)
				tail = map[EntryIndex]Tail{e.Index: {CRC: crc32.ChecksumIEEE(buf), Len: next.Size()}}
			case next.CarriedAs != CarriedTail:
				t.Fatalf("part %d carries part %d, which the plan does not say how to learn from (carriedAs %q)", part.Number, next.Number, next.CarriedAs)
			}
		}
		switch part.Kind {
		case PartCopy:
			e := &p.Entries[part.First]
			buf := make([]byte, part.Size())
			content(e.Source.Key, part.Start-e.DataOffset(), part.End-e.DataOffset(), buf)
			parts[i] = buf
		case PartChain:
			_, learned := partwork.ChainChecksums(ents, partwork.ChainRounds(ents, part.Start, part.End))
			for k, ok := range learned {
				if ok {
					learn(ents, k)
				}
			}
			// What else its headers need, its worker asks S3 for.
			for _, i := range part.NeedCRC {
				if k := int(i - part.First); !ents[k].CRC32.Known {
					learn(ents, k)
				}
			}
			parts[i] = buildChain(t, part, ents)
		case PartUpload:
			buf, crcs, err := BuildPart(part, ents, Directory{Offset: p.DirectoryOffset}, readAll, tail)
			if err != nil {
				t.Fatalf("part %d: %v", part.Number, err)
			}
			for k, v := range crcs {
				computed[k] = v
			}
			parts[i] = buf
		}
	}
	out := make([]byte, 0, p.Size)
	for _, b := range parts {
		out = append(out, b...)
	}
	for k, v := range computed {
		p.Entries[k].CRC32 = KnownCRC(v)
	}
	// The finalizer's parts, one after another, reading the directory as
	// it goes (create.Finalizer).
	var dir []byte
	dirBytes := p.DirectoryReader()
	for _, final := range p.FinalParts() {
		directory := func(crcs map[EntryIndex]uint32) ([]byte, error) {
			for k, v := range crcs {
				p.Entries[k].CRC32 = KnownCRC(v)
			}
			b := make([]byte, final.End-max(final.Start, p.DirectoryOffset))
			_, err := io.ReadFull(dirBytes, b)
			dir = append(dir, b...)
			return b, err
		}
		buf, _, err := BuildPart(&final, p.Entries[final.First:final.First+EntryIndex(final.Count)], Directory{Offset: p.DirectoryOffset, Read: directory}, readAll, nil)
		if err != nil {
			t.Fatalf("final part %d: %v", final.Number, err)
		}
		out = append(out, buf...)
	}
	if int64(len(out)) != p.Size {
		t.Fatalf("archive is %d bytes, plan says %d", len(out), p.Size)
	}
	if crc, err := p.ArchiveCRC(dir); err != nil || crc != crc32.ChecksumIEEE(out) {
		t.Fatalf("ArchiveCRC = %08x, %v; bytes have %08x", crc, err, crc32.ChecksumIEEE(out))
	}
	return out
}

// checkZip reads the archive with archive/zip and compares every entry.
func checkZip(t testing.TB, archive []byte, want []Entry) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	if len(zr.File) != len(want) {
		t.Fatalf("archive has %d entries, want %d", len(zr.File), len(want))
	}
	byName := map[string]*Entry{}
	for i := range want {
		byName[want[i].Name] = &want[i]
	}
	for _, f := range zr.File {
		w, ok := byName[f.Name]
		if !ok {
			t.Fatalf("unexpected entry %q", f.Name)
		}
		delete(byName, f.Name)
		if f.Method != zip.Store || f.Flags&0x8 != 0 || f.NonUTF8 {
			t.Errorf("%q: method %d flags %#x", f.Name, f.Method, f.Flags)
		}
		if int64(f.UncompressedSize64) != w.Size || w.Dir != strings.HasSuffix(f.Name, "/") {
			t.Errorf("%q: size %d, want %d", f.Name, f.UncompressedSize64, w.Size)
		}
		if w.Dir != f.Mode().IsDir() {
			t.Errorf("%q: mode %v, dir %v", f.Name, f.Mode(), w.Dir)
		}
		if !f.Modified.Equal(w.ModTime.Truncate(time.Second)) {
			t.Errorf("%q: modified %v, want %v", f.Name, f.Modified, w.ModTime)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%q: open: %v", f.Name, err)
		}
		got, err := io.ReadAll(rc) // archive/zip checks the CRC-32 at EOF
		if err != nil {
			t.Fatalf("%q: read: %v", f.Name, err)
		}
		wantBytes := make([]byte, w.Size)
		content(w.Source.Key, 0, w.Size, wantBytes)
		if !bytes.Equal(got, wantBytes) {
			t.Fatalf("%q: content differs", f.Name)
		}
		if f.CRC32 != crc32.ChecksumIEEE(wantBytes) {
			t.Errorf("%q: CRC %08x, want %08x", f.Name, f.CRC32, crc32.ChecksumIEEE(wantBytes))
		}
	}
}

// buildChain assembles a chain part the way the rounds do server-side:
// generated headers need their CRCs known up front.
func buildChain(t testing.TB, part *Part, ents []PlacedEntry) []byte {
	t.Helper()
	var out []byte
	for _, r := range partwork.ChainRounds(ents, part.Start, part.End) {
		for _, pc := range append(r.Middle, r.Last) {
			for _, seg := range pc.Segments {
				e := &ents[seg.Entry]
				switch seg.Kind {
				case partwork.SegmentHeader:
					if !e.CRC32.Known {
						t.Fatalf("chain part %d writes the header of %q without its CRC", part.Number, e.Name)
					}
					out = append(out, AppendLocalHeader(nil, e, e.CRC32.Sum)[seg.From:seg.To]...)
				case partwork.SegmentData:
					buf := make([]byte, seg.To-seg.From)
					content(e.Source.Key, seg.From, seg.To, buf)
					out = append(out, buf...)
				}
			}
		}
	}
	if int64(len(out)) != part.Size() {
		t.Fatalf("chain part %d built %d bytes, want %d", part.Number, len(out), part.Size())
	}
	return out
}
