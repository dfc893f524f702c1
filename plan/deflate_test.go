package plan

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/flate"

	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// deflated makes the entry of a DEFLATE-compressed object the read pass
// would hand the planner.
func deflated(t testing.TB, name string, raw []byte) (Entry, []byte) {
	t.Helper()
	var c bytes.Buffer
	w, _ := flate.NewWriter(&c, 6)
	w.Write(raw)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return Entry{Name: name, Source: Source{Bucket: "w", Key: name + ".z"}, Size: int64(c.Len()), CRC32: KnownCRC(crc32.ChecksumIEEE(c.Bytes())),
		Method: MethodDeflate, RawSize: int64(len(raw)), RawCRC32: KnownCRC(crc32.ChecksumIEEE(raw))}, c.Bytes()
}

// assemble writes the archive a plan describes, data from data[name].
func assemble(t testing.TB, p *Plan, data map[string][]byte) []byte {
	t.Helper()
	var out []byte
	for i := range p.Entries {
		e := &p.Entries[i]
		out = AppendLocalHeader(out, e, e.CRC32.Sum)
		out = append(out, data[e.Name]...)
	}
	dir, err := p.Directory()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, dir...)
	if int64(len(out)) != p.Size {
		t.Fatalf("archive is %d bytes, planned %d", len(out), p.Size)
	}
	return out
}

// Mixed STORED and DEFLATE entries: the headers say method 8, the
// uncompressed CRC-32 and both sizes; archive/zip inflates and checks them.
func TestPlanDeflatedEntries(t *testing.T) {
	text := bytes.Repeat([]byte("a line of a log file, again and again\n"), 4000)
	stored := []byte("stored as it is")
	e1, c1 := deflated(t, "log.txt", text)
	e2 := Entry{Name: "raw.bin", Source: Source{Bucket: "s", Key: "raw.bin"}, Size: int64(len(stored)), CRC32: KnownCRC(crc32.ChecksumIEEE(stored))}
	e3 := Entry{Name: "empty", Source: Source{Bucket: "s", Key: "empty"}}
	for _, s := range []Strategy{StrategyStream, StrategyDuo} {
		p := mustPlan(t, []Entry{e1, e2, e3}, Options{Strategy: s})
		archive := assemble(t, p, map[string][]byte{"log.txt": c1, "raw.bin": stored})
		zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"log.txt": text, "raw.bin": stored, "empty": {}}
		for _, f := range zr.File {
			if f.ReaderVersion != 20 {
				t.Errorf("%s: version needed %d, want 20", f.Name, f.ReaderVersion)
			}
			if wantMethod := map[bool]uint16{true: zip.Deflate, false: zip.Store}[f.Name == "log.txt"]; f.Method != wantMethod {
				t.Errorf("%s: method %d, want %d", f.Name, f.Method, wantMethod)
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc) // checks the CRC-32 and size
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			if !bytes.Equal(got, want[f.Name]) {
				t.Errorf("%s: %d bytes differ from the %d written", f.Name, len(got), len(want[f.Name]))
			}
		}
		// The local header carries both sizes and the uncompressed CRC-32.
		lh := archive[p.Entries[0].Offset:]
		if m, crc, csize, usize := binary.LittleEndian.Uint16(lh[8:]), binary.LittleEndian.Uint32(lh[14:]), binary.LittleEndian.Uint32(lh[18:]), binary.LittleEndian.Uint32(lh[22:]); m != 8 || crc != e1.RawCRC32.Sum || int64(csize) != e1.Size || int64(usize) != e1.RawSize {
			t.Errorf("local header: method %d crc %08x sizes %d/%d, want 8 %08x %d/%d", m, crc, csize, usize, e1.RawCRC32.Sum, e1.Size, e1.RawSize)
		}
	}
}

// An entry whose uncompressed size needs ZIP64 but whose compressed size
// does not: version 45, both sizes in the local header's ZIP64 field, both
// in the central directory's; archive/zip inflates 4 GiB of zeros from it
// (about 2 s: DEFLATE makes zeros cheap both ways).
func TestPlanDeflatedZip64(t *testing.T) {
	const rawSize = 1<<32 + 5
	raw := io.LimitReader(zeroReader{}, rawSize)
	var c bytes.Buffer
	e := Entry{Name: "zeros", Source: Source{Bucket: "w", Key: "zeros.z"}, Method: MethodDeflate, RawSize: rawSize, RawCRC32: KnownCRC(zipformat.ZeroCRC(rawSize))}
	w, _ := flate.NewWriter(&c, 1)
	if _, err := io.Copy(w, raw); err != nil {
		t.Fatal(err)
	}
	w.Close()
	e.Size, e.CRC32 = int64(c.Len()), KnownCRC(crc32.ChecksumIEEE(c.Bytes()))
	small := Entry{Name: "after", Source: Source{Bucket: "s", Key: "after"}, Size: 3, CRC32: KnownCRC(crc32.ChecksumIEEE([]byte("abc")))}
	p := mustPlan(t, []Entry{e, small}, Options{Strategy: StrategyStream})
	if !p.Zip64 {
		t.Fatal("plan has no ZIP64 for a 4 GiB entry")
	}
	archive := assemble(t, p, map[string][]byte{"zeros": c.Bytes(), "after": []byte("abc")})
	lh := archive[:p.Entries[0].HeaderLen]
	if v, cs, us := binary.LittleEndian.Uint16(lh[4:]), binary.LittleEndian.Uint32(lh[18:]), binary.LittleEndian.Uint32(lh[22:]); v != 45 || cs != 0xFFFFFFFF || us != 0xFFFFFFFF {
		t.Errorf("local header: version %d sizes %x/%x, want 45 and the ZIP64 sentinels", v, cs, us)
	}
	extra := lh[30+len("zeros"):]
	if id, n, u, cz := binary.LittleEndian.Uint16(extra), binary.LittleEndian.Uint16(extra[2:]), binary.LittleEndian.Uint64(extra[4:]), binary.LittleEndian.Uint64(extra[12:]); id != 1 || n != 16 || u != rawSize || int64(cz) != e.Size {
		t.Errorf("local ZIP64 field: id %d len %d sizes %d/%d, want 1 16 %d/%d", id, n, u, cz, rawSize, e.Size)
	}
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	f := zr.File[0]
	if f.UncompressedSize64 != rawSize || int64(f.CompressedSize64) != e.Size || f.ReaderVersion != 45 || f.CRC32 != e.RawCRC32.Sum {
		t.Errorf("central directory: sizes %d/%d version %d crc %08x", f.UncompressedSize64, f.CompressedSize64, f.ReaderVersion, f.CRC32)
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, rc); err != nil || n != rawSize {
		t.Fatalf("inflated %d bytes, err %v", n, err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// compressedLayout is what the read pass hands the planner for n objects of
// mixed sizes around the part minimum, compressed (auto) or not: DEFLATE
// entries whose sources are their compressed copies, with those sizes and
// CRC-32s, beside STORED entries whose CRC-32 S3 may or may not store.
func compressedLayout(seed uint64, n int) []Entry {
	rng := rand.New(rand.NewPCG(seed, 21))
	entries := make([]Entry, n)
	for i := range entries {
		raw := rng.Int64N(3 * MinPartSize)
		if rng.IntN(4) == 0 {
			raw = rng.Int64N(256 << 10)
		}
		e := Entry{Name: fmt.Sprintf("e%04d", i), Source: Source{Bucket: "src", Key: fmt.Sprintf("e%04d", i)}, Size: raw}
		if rng.IntN(3) == 0 {
			e.CRC32 = KnownCRC(rng.Uint32())
		}
		if raw > 0 && rng.IntN(2) == 0 {
			// A ratio from 2% to 95%: some end just under 5 MiB, some over.
			e.Method, e.RawSize, e.RawCRC32 = MethodDeflate, raw, KnownCRC(rng.Uint32())
			e.Origin = &Source{Bucket: "src", Key: e.Name}
			e.Source = Source{Bucket: "work", Key: "deflate/" + e.Name}
			e.Size, e.CRC32 = max(1, raw*int64(2+rng.IntN(94))/100), KnownCRC(rng.Uint32())
		}
		entries[i] = e
	}
	return entries
}

// Property over many seeds: every plan of a compressed layout, whatever the
// strategy, cuts every part but the last to at least 5 MiB and at most
// 5 GiB, copies ranges only of sources over 5 MiB, and its workers' jobs (as
// encoded, carried parts included) build exactly those parts.
func TestCompressedLayoutsKeepPartSizes(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		entries := compressedLayout(seed, 5+int(seed%60))
		for _, s := range []Strategy{StrategyStream, StrategyDuo, StrategyChain, StrategyAuto} {
			p, err := Make(entries, Options{Strategy: s, Workers: 1 + int(seed%8)})
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, s, err)
			}
			for i, part := range p.Parts {
				if i < len(p.Parts)-1 && part.Size() < MinPartSize {
					t.Errorf("seed %d %s: part %d of %d is %d bytes", seed, s, part.Number, len(p.Parts), part.Size())
				}
				if part.Kind == PartCopy {
					e := &p.Entries[part.First]
					if _, ok := partwork.CopyRange(part.Start-e.DataOffset(), part.End-e.DataOffset(), e.Size); !ok {
						t.Errorf("seed %d %s: part %d copies a range of %q, a source of %d bytes", seed, s, part.Number, e.Name, e.Size)
					}
				}
			}
			enc, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(enc.Header, bytesReader(enc.Entries), bytesReader(enc.Parts)); err != nil {
				t.Errorf("seed %d %s: the encoded jobs: %v", seed, s, err)
			}
		}
	}
}
