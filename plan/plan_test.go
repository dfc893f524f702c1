package plan

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/flate"
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/zipformat"
)

var strategies = []Strategy{StrategyStream, StrategyDuo, StrategyChain, StrategyAuto}

var t0 = time.Date(2024, 5, 17, 13, 45, 30, 0, time.UTC)

func obj(name string, size int64) Entry {
	return Entry{Name: name, Source: Source{Bucket: "src", Key: "p/" + name, ETag: `"e"`}, Size: size, ModTime: t0}
}

func sized(prefix string, sizes ...int64) []Entry {
	out := make([]Entry, len(sizes))
	for i, s := range sizes {
		out[i] = obj(fmt.Sprintf("%s%03d.bin", prefix, i), s)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		entries []Entry
		opts    Options
	}{
		{"one-small-object", sized("a", 1000), Options{}},
		{"empty-archive", nil, Options{}},
		{"zero-byte-entries", sized("z", 0, 0, 10, 0), Options{}},
		{"unicode-and-nested", []Entry{obj("über/naïve/文件.txt", 300), obj("emoji/🙂.bin", 7), obj("deep/a/b/c/d.txt", 1)}, Options{}},
		{"directories", AddDirectories([]Entry{obj("a/b/c.txt", 10), obj("a/d.txt", 20), obj("e.txt", 0)}), Options{}},
		{"small-objects-many-parts", sized("s", 3*MiB, 3*MiB, 3*MiB, 3*MiB, 3*MiB, 3*MiB, 3*MiB), Options{PartSize: 5 * MiB}},
		{"big-objects-only", sized("b", 6*MiB, 7*MiB, 8*MiB, 5*MiB, 9*MiB), Options{}},
		{"exactly-5mib-objects", sized("x", 5*MiB, 5*MiB, 5*MiB), Options{}},
		{"mixed", sized("m", 2*MiB, 6*MiB, 4*MiB, 7*MiB+3, 1, 5*MiB-1, 8*MiB, 3*MiB, 0, 6*MiB), Options{}},
		{"data-just-under-a-part", sized("u", 5*MiB-200), Options{}},
		{"workers-balance", sized("w", 4*MiB, 4*MiB, 4*MiB, 4*MiB, 4*MiB, 4*MiB, 4*MiB, 4*MiB), Options{PartSize: 5 * MiB, Workers: 3}},
		{"challenge-scaled", Challenge(24, 7), Options{}},
		{"small-fill-short-of-a-run", sized("f", 100, 200, 6*MiB, 1, 50, 3*MiB), Options{}},
		{"many-bigs-few-smalls", sized("g", 6*MiB, 7*MiB, 5*MiB, 8*MiB, 100, 9*MiB, 5*MiB+3), Options{}},
	}
	for _, c := range cases {
		for _, s := range strategies {
			t.Run(c.name+"/"+string(s), func(t *testing.T) {
				opts := c.opts
				opts.Strategy = s
				entries := append([]Entry(nil), c.entries...)
				p := mustPlan(t, entries, opts)
				checkZip(t, execute(t, p), c.entries)
			})
		}
	}
}

func TestStreamCopiesNothing(t *testing.T) {
	p := mustPlan(t, Challenge(30, 1), Options{Strategy: StrategyStream, Workers: 4})
	st := p.Stats()
	if st.CopyParts != 0 || st.StreamedBytes != st.ArchiveBytes {
		t.Fatalf("stream plan copies: %+v", st)
	}
	if n := len(p.WorkerParts()); n%4 != 0 {
		t.Errorf("%d worker parts, want a multiple of 4 workers", n)
	}
}

// On the challenge set duo must beat the best published Duo planner (49.8%
// streamed) and stay within 0.1 point of the lower bound that no
// single-upload Duo layout can beat (duoLowerBound, strategy_test.go). The
// issue asked for 47%, from the bound max(k·5 MiB, total − Σ top-k sizes);
// that bound ignores that fill objects are whole, and the tight bound is
// about 49% for this distribution.
func TestDuoChallengeStreamedFraction(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		entries := Challenge(3000, seed)
		p := mustPlan(t, entries, Options{Strategy: StrategyDuo})
		st := p.Stats()
		bound := float64(duoLowerBound(entries)) / float64(st.ArchiveBytes)
		t.Logf("seed %d: streamed %.2f%% (bound %.2f%%) of %d bytes, %d parts (%d upload, %d copy), requests %+v",
			seed, 100*st.StreamedFraction(), 100*bound, st.ArchiveBytes, st.Parts, st.UploadParts, st.CopyParts, st.Requests)
		if f := st.StreamedFraction(); f >= 0.498 || f > bound+0.001 {
			t.Errorf("seed %d: duo streams %.2f%%, want under the published 49.8%% and within 0.1 point of the bound %.2f%%", seed, 100*f, 100*bound)
		}
	}
}

// Every copied object's header is streamed in front of it. Its CRC comes
// from S3's answer to the copy, which the part before carries: a duo plan
// asks for no CRC beforehand, and objects streamed whole need none.
func TestCRCsNeeded(t *testing.T) {
	p := mustPlan(t, sized("m", 2*MiB, 6*MiB, 4*MiB, 7*MiB), Options{Strategy: StrategyDuo})
	if need := p.CRCsNeeded(); len(need) != 0 {
		t.Errorf("CRCsNeeded = %v, want none", need)
	}
	copies := 0
	for i, part := range p.Parts {
		if part.Kind != PartCopy {
			continue
		}
		copies++
		if !p.Carried(i) {
			t.Errorf("copy part %d (%q) is not carried by part %d", part.Number, p.Entries[part.First].Name, part.Number-1)
		}
	}
	if copies == 0 {
		t.Fatal("the plan copies nothing")
	}
}

func TestBuildPartRefusesUnknownCRC(t *testing.T) {
	p := mustPlan(t, sized("b", 6*MiB, 7*MiB), Options{Strategy: StrategyDuo})
	part := &p.Parts[0]
	_, _, err := BuildPart(part, p.Entries[part.First:part.First+EntryIndex(part.Count)], Directory{Offset: p.DirectoryOffset}, func(r []DataRead) error { return nil }, nil)
	var unknown *UnknownCRCError
	if !errors.As(err, &unknown) {
		t.Fatalf("BuildPart without the CRC of a copied entry: err = %v, want UnknownCRCError", err)
	}
}

func TestBuildPartDetectsChangedSource(t *testing.T) {
	entries := sized("a", 100)
	entries[0].CRC32 = KnownCRC(0x12345678)
	p := mustPlan(t, entries, Options{})
	fill := func(reads []DataRead) error {
		for _, r := range reads {
			content(r.Entry.Source.Key, r.From, r.To, r.Dst)
		}
		return nil
	}
	_, _, err := BuildPart(p.FinalPart(), p.Entries, Directory{Offset: p.DirectoryOffset, Read: func(map[EntryIndex]uint32) ([]byte, error) { return p.Directory() }}, fill, nil)
	var mismatch *failure.ChecksumMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("err = %v, want CRCMismatchError", err)
	}
}

func TestDirectoryRefusesUnknownCRC(t *testing.T) {
	p := mustPlan(t, sized("a", 10), Options{})
	if _, err := p.Directory(); err == nil {
		t.Fatal("Directory with an unknown CRC succeeded; it must never write a guess")
	}
}

func TestMakeRejects(t *testing.T) {
	cases := []struct {
		name    string
		entries []Entry
		opts    Options
		want    any
	}{
		{"duplicate-names", []Entry{obj("a", 1), obj("a", 2)}, Options{}, new(*DuplicateError)},
		{"dotdot", []Entry{obj("../etc/passwd", 1)}, Options{}, new(*NameError)},
		{"negative-size", []Entry{obj("a", -1)}, Options{}, new(*InputError)},
		{"part-size-too-small", sized("a", 1), Options{PartSize: MiB}, nil},
		{"unknown-strategy", sized("a", 1), Options{Strategy: "zip-it"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Make(c.entries, c.opts)
			if err == nil {
				t.Fatal("Make succeeded")
			}
			if c.want != nil && !errors.As(err, c.want) {
				t.Fatalf("err = %T %v", err, err)
			}
		})
	}
}

func TestTooManyParts(t *testing.T) {
	// 10,001 objects of 5 MiB streamed in 5 MiB parts cannot fit one upload.
	entries := make([]Entry, 10001)
	for i := range entries {
		entries[i] = obj(fmt.Sprintf("o%05d", i), 5*MiB)
	}
	_, err := Make(entries, Options{Strategy: StrategyDuo})
	var limit *failure.LimitError
	if !errors.As(err, &limit) {
		t.Fatalf("err = %v, want LimitError", err)
	}
	t.Log(err)
}

func TestEncodeDecode(t *testing.T) {
	for _, s := range strategies {
		p := mustPlan(t, Challenge(40, 2), Options{Strategy: s})
		enc, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Decode(enc.Header, bytesReader(enc.Entries), bytesReader(enc.Parts))
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Entries) != len(p.Entries) || len(q.Parts) != len(p.Parts) || q.Size != p.Size {
			t.Fatalf("decoded plan differs")
		}
		// A plan read back (the planner's after a CRC round) runs on the
		// workers it was cut for, not one batch at a time.
		if q.Fit != p.Fit || q.Fit.Workers == 0 {
			t.Fatalf("%s: decoded fit %+v, encoded %+v", s, q.Fit, p.Fit)
		}
		jobs, _ := DecodeParts(bytesReader(enc.Parts))
		for _, j := range jobs {
			got, err := DecodeEntries(bytesReader(enc.Entries[j.EntriesRange[0]:j.EntriesRange[1]]))
			if err != nil || len(got) != j.Count || (j.Count > 0 && got[0].Index != j.First) {
				t.Fatalf("part %d: entries range gives %d entries (%v), want %d from %d", j.Number, len(got), err, j.Count, j.First)
			}
		}
	}
}

// A header split between two parts is needed by both, and asked for once.
func TestCRCsNeededOnce(t *testing.T) {
	p := mustPlan(t, sized("x", 16*MiB, 16*MiB+10), Options{Strategy: StrategyStream, PartSize: 16 * MiB})
	seen := map[EntryIndex]bool{}
	for _, i := range p.CRCsNeeded() {
		if seen[i] {
			t.Fatalf("entry %d asked for twice: %v", i, p.CRCsNeeded())
		}
		seen[i] = true
	}
}

// Rounding the part count up to the workers never breaks the part limit.
func TestManyWorkersStayWithinThePartLimit(t *testing.T) {
	entries := make([]Entry, 60)
	for i := range entries {
		entries[i] = obj(fmt.Sprintf("g%02d", i), GiB)
	}
	for _, s := range strategies {
		mustPlan(t, entries, Options{Strategy: s, Workers: 10000})
	}
}

// The planner asks S3 for no CRC-32 of an object whose start a part
// streams and whose rest it copies (CarriedTail): that part's worker asks,
// in parallel with the rest of its work, so a duo plan of the challenge set
// makes no request per object before the workers start. Its model prices
// that HEAD in the worker's batch, not up front.
func TestCopiedTailsAreTheWorkers(t *testing.T) {
	p := mustPlan(t, Challenge(3000, 1), Options{Strategy: StrategyDuo, Workers: 1})
	tails := p.CopiedTails()
	if len(tails) == 0 {
		t.Fatal("no copied tails: the case tests nothing")
	}
	for _, i := range p.CRCsNeeded() {
		if tails[i] {
			t.Fatalf("entry %d: a copied tail among the CRC-32s the planner asks for (%d asked, %d tails)", i, len(p.CRCsNeeded()), len(tails))
		}
	}
	var heads int
	for _, l := range p.Loads(p.Fit.PartsPerBatch) {
		heads += l.Requests.Head
	}
	if heads < len(tails) {
		t.Errorf("the batches make %d HEADs for %d copied tails: want one a tail at least", heads, len(tails))
	}
}

// A worker learns the CRC-32s of the entries a piped part streams whole
// by HEADs (GET-priced) and of a streamed start from its copied rest, so
// the model prices no probe copy (PUT-priced) for them: on the challenge
// set duo's only UploadPartCopy requests are its copy parts, and its HEADs
// are one for each entry a piped part streams whole and one for each tail.
func TestPipedPartsArePricedWithoutProbes(t *testing.T) {
	p := mustPlan(t, Challenge(3000, 1), Options{Strategy: StrategyDuo, Workers: 100})
	st := p.Stats()
	if st.Requests.UploadPartCopy != st.CopyParts {
		t.Errorf("%d UploadPartCopy requests for %d copy parts: probes priced", st.Requests.UploadPartCopy, st.CopyParts)
	}
	var whole int
	for i := range p.Parts {
		part := &p.Parts[i]
		if part.Kind != PartUpload || part.Final {
			continue
		}
		entries := p.Entries[part.First : part.First+EntryIndex(part.Count)]
		segs := partwork.Segments(entries, p.DirectoryOffset, part.Start, part.End)
		for _, s := range segs {
			if partwork.WholeData(entries, s) && !entries[s.Entry].CRC32.Known && s.To-s.From >= partwork.MinCRCProbe {
				whole++
			}
		}
	}
	if want := whole + len(p.CopiedTails()); st.Requests.Head != want {
		t.Errorf("%d HEADs priced, want %d (%d whole entries streamed, %d tails)", st.Requests.Head, want, whole, len(p.CopiedTails()))
	}
}

// The planner asks for no CRC-32 a chain part needs: its worker does,
// before its first round, a round trip the model adds to the part's steps.
func TestChainCRCsAreTheWorkers(t *testing.T) {
	p := mustPlan(t, Challenge(3000, 1), Options{Strategy: StrategyChain, Workers: 1})
	var needed, heads int
	for i := range p.Parts {
		if p.Parts[i].Kind == PartChain {
			needed += len(p.Parts[i].NeedCRC)
		}
	}
	for _, l := range p.Loads(p.Fit.PartsPerBatch) {
		heads += l.Requests.Head
	}
	if needed == 0 {
		t.Fatal("no chain part needs a CRC-32: the case tests nothing")
	}
	if n := len(p.CRCsNeeded()); n != 0 || heads < needed {
		t.Errorf("the planner asks for %d CRC-32s, the chain workers %d HEADs for %d needed: want 0 and at least one each", n, heads, needed)
	}
}

// internal/partwork, below plan, keeps its own copy of S3's part sizes: the
// two must agree. Its pad is a smallest part, it copies ranges only of
// sources over MinPartSize, and it copies a range over MaxPartSize in two.
func TestPartworkPartSizesArePlans(t *testing.T) {
	if partwork.PadSize != MinPartSize {
		t.Errorf("partwork.PadSize = %d, want MinPartSize %d", partwork.PadSize, int64(MinPartSize))
	}
	if _, ok := partwork.CopyRange(0, 1, MinPartSize); ok {
		t.Errorf("partwork copies a range of a source of MinPartSize bytes")
	}
	if _, ok := partwork.CopyRange(0, 1, MinPartSize+1); !ok {
		t.Errorf("partwork copies no range of a source over MinPartSize bytes")
	}
	e := []PlacedEntry{{Entry: &Entry{Name: "a", Size: MaxPartSize + 1}, HeaderLen: 31}}
	rounds := partwork.ChainRounds(e, e[0].DataOffset(), e[0].End())
	if n := len(rounds[0].Middle) + 1; len(rounds) != 1 || n != 2 {
		t.Errorf("a range of MaxPartSize+1 bytes chained in %d rounds, %d pieces in the first; want 1 round of 2", len(rounds), n)
	}
}

// TestCutPartsTerabytesInMillionsOfParts guards the cut of a chained run of
// terabytes into parts of MinPartSize: size·k overflowed int64 past ~1.4 M
// entries of the challenge set (7.8 TB), giving parts with negative ends
// that describe then sliced backwards (a panic in plan).
func TestCutPartsTerabytesInMillionsOfParts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start int64
		size  int64
	}{
		{"challenge-1.5M-chain-run", 3_500_000, 7_864_473_583_609},
		{"48TiB-object-limit", 0, 48 << 40},
		{"odd-remainder", 1, 10_000*MinPartSize + 9_999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{PartSize: MinPartSize, Workers: 100}
			parts := cutParts(PartChain, tc.start, tc.start+tc.size, opts)
			pos := tc.start
			for i, p := range parts {
				if p.Start != pos || p.End <= p.Start {
					t.Fatalf("part %d of %d is [%d, %d), want it to start at %d and be non-empty", i, len(parts), p.Start, p.End, pos)
				}
				if n := p.End - p.Start; n < MinPartSize || n > MaxPartSize {
					t.Fatalf("part %d of %d has %d bytes, outside [%d, %d]", i, len(parts), n, MinPartSize, MaxPartSize)
				}
				pos = p.End
			}
			if pos != tc.start+tc.size {
				t.Fatalf("parts end at %d, want %d", pos, tc.start+tc.size)
			}
			copies := (&Plan{}).copyParts(span{start: tc.start, end: tc.start + tc.size, copy: true})
			if last := copies[len(copies)-1]; copies[0].Start != tc.start || last.End != tc.start+tc.size {
				t.Fatalf("copy parts cover [%d, %d), want [%d, %d)", copies[0].Start, last.End, tc.start, tc.start+tc.size)
			}
		})
	}
}

// TestShareIsExactFloor checks share against arbitrary-precision arithmetic
// where size·k does not fit in 64 bits.
func TestShareIsExactFloor(t *testing.T) {
	sizes := []int64{0, 1, 5 << 20, 7_864_473_583_609, 48 << 40, 1<<62 + 12345}
	counts := []int64{1, 2, 3, 9_999, 1_494_540, 1 << 30}
	for _, size := range sizes {
		for _, n := range counts {
			for _, k := range []int64{0, 1, n / 3, n / 2, n - 1, n} {
				want := new(big.Int).Mul(big.NewInt(size), big.NewInt(k))
				want.Quo(want, big.NewInt(n))
				if got := share(size, k, n); got != want.Int64() {
					t.Fatalf("share(%d, %d, %d) = %d, want %d", size, k, n, got, want)
				}
			}
		}
	}
}

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

// longNamed returns n one-byte objects with names of nameLen bytes: a
// central directory of about n·(46+nameLen) bytes over little data.
func longNamed(n, nameLen int) []Entry {
	out := make([]Entry, n)
	for i := range out {
		name := fmt.Sprintf("%08d-", i)
		name += strings.Repeat("n", nameLen-len(name))
		out[i] = Entry{Name: name, Source: Source{Bucket: "b", Key: name}, Size: 1, ModTime: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
	return out
}

// TestDirectoryCutIntoParts guards the central directory in parts: a
// 40 MiB directory is cut into final parts of the directory part size (the
// last one shorter), numbered on from the workers' parts, each at least
// 5 MiB but the last; the plan validates, survives encoding, and its bytes
// are a ZIP archive/zip reads. The finalizer holds one such part at a time.
func TestDirectoryCutIntoParts(t *testing.T) {
	entries := longNamed(40_000, 1_000)
	for _, tc := range []struct {
		strategy Strategy
		target   int64
	}{
		{StrategyStream, 16 * MiB},
		{StrategyStream, MinPartSize},
		{StrategyChain, 16 * MiB},
		{StrategyAuto, 8 * MiB},
		{StrategyStream, 0}, // the default, 64 MiB: one final part
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.strategy, tc.target), func(t *testing.T) {
			p := mustPlan(t, entries, Options{Strategy: tc.strategy, DirectoryPartSize: tc.target})
			if p.DirectorySize < 40*MiB {
				t.Fatalf("directory is %d bytes, want at least 40 MiB for this test", p.DirectorySize)
			}
			target := tc.target
			if target == 0 {
				target = DefaultDirectoryPartSize
			}
			finals := p.FinalParts()
			want := ceilDiv(p.Size-finals[0].Start, target)
			if int64(len(finals)) != want {
				t.Fatalf("%d final parts for %d bytes from byte %d, want %d of at most %d", len(finals), p.Size-finals[0].Start, finals[0].Start, want, target)
			}
			if finals[0].Start > p.DirectoryOffset || len(p.WorkerParts())+len(finals) != len(p.Parts) {
				t.Fatalf("final parts start at %d (directory at %d), %d worker parts of %d", finals[0].Start, p.DirectoryOffset, len(p.WorkerParts()), len(p.Parts))
			}
			for i, f := range finals {
				if !f.Final || f.Kind != PartUpload || f.Number != len(p.WorkerParts())+i+1 || f.Size() > target || (i < len(finals)-1 && f.Size() < MinPartSize) {
					t.Fatalf("final part %d of %d: %+v; want an upload part numbered %d, at most %d bytes, at least %d but the last", i+1, len(finals), f, len(p.WorkerParts())+i+1, target, MinPartSize)
				}
			}
			enc, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(enc.Header, bytes.NewReader(enc.Entries), bytes.NewReader(enc.Parts))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(back.FinalParts()) != len(finals) {
				t.Fatalf("decoded plan has %d final parts, want %d", len(back.FinalParts()), len(finals))
			}
			checkZip(t, execute(t, back), entries)
		})
	}
}

// TestValidateRefusesWorkerPartInDirectory: only the finalizer's parts,
// last and marked Final, may hold central directory bytes.
func TestValidateRefusesWorkerPartInDirectory(t *testing.T) {
	p := mustPlan(t, longNamed(10_000, 1_000), Options{Strategy: StrategyStream, DirectoryPartSize: MinPartSize})
	if len(p.FinalParts()) < 2 {
		t.Fatalf("%d final parts, want 2 or more", len(p.FinalParts()))
	}
	p.Parts[len(p.Parts)-2].Final = false
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "in the central directory") {
		t.Fatalf("Validate with a directory part not final: %v, want it refused", err)
	}
}

// TestDirectoryPartSizeBounds: a directory part is a part: 5 MiB to 5 GiB.
func TestDirectoryPartSizeBounds(t *testing.T) {
	for _, size := range []int64{MinPartSize - 1, MaxPartSize + 1} {
		if _, err := Make(longNamed(2, 20), Options{DirectoryPartSize: size}); err == nil || !strings.Contains(err.Error(), "directory part size") {
			t.Errorf("directory part size %d: %v, want refused", size, err)
		}
	}
}

// TestDirectoryReaderMemoryFlat: reading the central directory part by
// part into the finalizer's buffer allocates a constant, whatever the entry
// count (35,000 and 70,000 entries), where Directory allocates all of it.
func TestDirectoryReaderMemoryFlat(t *testing.T) {
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	part := make([]byte, MinPartSize)
	for _, n := range []int{35_000, 70_000} {
		p := mustPlan(t, longNamed(n, 300), Options{Strategy: StrategyStream})
		for i := range p.Entries {
			p.Entries[i].CRC32 = KnownCRC(uint32(i))
		}
		var err error
		streamed := allocated(func() {
			r := p.DirectoryReader()
			for err == nil {
				_, err = io.ReadFull(r, part)
			}
		})
		if err != io.ErrUnexpectedEOF && err != io.EOF {
			t.Fatalf("%d entries: reading the directory: %v", n, err)
		}
		whole := allocated(func() { _, err = p.Directory() })
		t.Logf("%d entries, directory %d bytes: read in parts allocates %d bytes, whole %d", n, p.Size-p.DirectoryOffset, streamed, whole)
		if streamed > 64<<10 {
			t.Errorf("%d entries: reading the %d-byte directory in %d-byte parts allocated %d bytes, want a constant under 64 KiB", n, p.Size-p.DirectoryOffset, len(part), streamed)
		}
	}
}

// mustPlan makes and validates a plan.
func mustPlan(t testing.TB, entries []Entry, opts Options) *Plan {
	t.Helper()
	p, err := Make(entries, opts)
	if err != nil {
		t.Fatalf("Make: %v", err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return p
}

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

var update = flag.Bool("update", false, "rewrite the golden plans in testdata/golden")

// goldenEntries is a small fixed input: small and big objects, a folder, an
// empty object, a Unicode name, one CRC known.
func goldenEntries() []Entry {
	at := time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)
	e := func(name string, size int64) Entry {
		return Entry{Name: name, Source: Source{Bucket: "src", Key: "in/" + name, ETag: `"etag-` + name + `"`}, Size: size, ModTime: at}
	}
	out := []Entry{e("docs/", 0), e("docs/readme.txt", 1234), e("photos/a.jpg", 6*MiB+17), e("photos/b.jpg", 2*MiB),
		e("photos/c.jpg", 7*MiB), e("empty.bin", 0), e("naïve/résumé.pdf", 3*MiB+5), e("video.mp4", 12*MiB)}
	out[0].Dir = true
	out[1].CRC32 = KnownCRC(0x1234abcd)
	return out
}

// The serialized plan of a fixed input is stable: a change to the layout,
// the parts or the encoding shows up as a diff here (go test -run Golden -update).
func TestGoldenPlans(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			p := mustPlan(t, goldenEntries(), Options{Strategy: s, Workers: 2, PartSize: 5 * MiB})
			enc, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			got.Write(enc.Header)
			got.WriteString("\n--- entries.jsonl\n")
			got.Write(enc.Entries)
			got.WriteString("--- parts.jsonl\n")
			got.Write(enc.Parts)
			path := filepath.Join("testdata", "golden", string(s)+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./plan -run Golden -update)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("plan differs from %s (run with -update if the change is intended):\n%s", path, got.String())
			}
		})
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// identityInputs are seeded synthetic inputs whose plans must not change
// when the planner's memory layout does: big objects (every strategy cuts
// copies), more than 65,535 small ones (ZIP64 end records, thousands of
// entries a part), and DEFLATE entries beside folders, empty and known-CRC
// entries and one over 4 GiB (ZIP64 sizes).
func identityInputs() map[string][]Entry {
	challenge := Challenge(3000, 7)
	for i := range challenge {
		e := &challenge[i]
		e.Source.ETag = fmt.Sprintf(`"%032x"`, i)
		if i%5 == 0 {
			e.CRC32 = KnownCRC(uint32(i) * 2654435761)
		}
		if i%7 == 0 {
			e.Source.VersionID = fmt.Sprintf("v%d", i)
		}
	}
	small := small(70_000, 3)
	for i := 0; i < len(small); i += 3 {
		small[i].CRC32 = KnownCRC(uint32(i) ^ 0x5a5a5a5a)
	}
	var mixed []Entry
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	for i, e := range Challenge(400, 11) {
		e.Name = fmt.Sprintf("d%02d/%s", i%13, e.Name)
		e.ModTime = at.Add(time.Duration(i) * time.Minute)
		e.CRC32 = KnownCRC(uint32(i) * 40503)
		switch i % 4 {
		case 0, 1: // compressed by the read pass: its own object, the compressed copy
			origin := e.Source
			e.Source = Source{Bucket: "work", Key: "read/" + e.Name + ".z"}
			e.Method, e.RawSize, e.RawCRC32, e.Origin = MethodDeflate, e.Size*4+int64(i), KnownCRC(uint32(i)*69069), &origin
			e.SHA256 = hex.EncodeToString(make([]byte, 31)) + fmt.Sprintf("%02x", i%256)
		case 2:
			if i%8 == 2 {
				e.Size = 0
			}
		}
		mixed = append(mixed, e)
	}
	huge := Entry{Name: "huge.bin", Source: Source{Bucket: "src", Key: "huge.bin"}, Size: 4*GiB + 123, ModTime: at}
	mixed = append(mixed, huge, Entry{Name: "empty-dir/", Dir: true, ModTime: at})
	return map[string][]Entry{"challenge-3000": challenge, "small-70000": small, "mixed-402": mixed}
}

// planDigest is the SHA-256 of everything a plan gives its callers: the
// header, entries and part-job files, the alternative, the CRCs it needs
// and the copied tails; not the Fit the header also carries, which
// fit_test.go checks.
func planDigest(t testing.TB, p *Plan) string {
	t.Helper()
	unfitted := *p
	unfitted.Fit = Fit{}
	enc, err := unfitted.Encode()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write(enc.Header)
	h.Write(enc.Entries)
	h.Write(enc.Parts)
	alt, _ := json.Marshal(p.Alternative)
	tails := p.CopiedTails()
	var tailList []EntryIndex
	for i := range p.Entries {
		if tails[EntryIndex(i)] {
			tailList = append(tailList, EntryIndex(i))
		}
	}
	fmt.Fprintf(h, "%s %v %v %d", alt, p.CRCsNeeded(), tailList, enc.Jobs)
	return hex.EncodeToString(h.Sum(nil))
}

// A plan is byte for byte what the planner made before its entries were
// stored compactly: the digests in testdata/plan-digests.txt were computed
// on the code before that change (go test ./plan -run PlansUnchanged -update
// rewrites them, which only an intended change of the layout may do).
func TestPlansUnchangedByCompactStorage(t *testing.T) {
	path := filepath.Join("testdata", "plan-digests.txt")
	want := map[string]string{}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), " "); ok {
				want[k] = v
			}
		}
		f.Close()
	}
	var got []string
	inputs := identityInputs()
	for _, name := range []string{"challenge-3000", "small-70000", "mixed-402"} {
		for _, s := range strategies {
			for _, o := range []Options{
				{Strategy: s, Workers: 100, PartsPerBatch: 8},
				{Strategy: s, Workers: 7, PartSize: 5 * MiB, Prefer: PreferCost, DirectoryPartSize: 5 * MiB},
			} {
				key := fmt.Sprintf("%s/%s/w%d/%s", name, s, o.Workers, o.Prefer)
				p, err := Make(inputs[name], o)
				var d string
				if err != nil {
					d = "error:" + strings.ReplaceAll(err.Error(), " ", "_")
				} else {
					d = planDigest(t, p)
				}
				got = append(got, key+" "+d)
				if !*update && want[key] != d {
					t.Errorf("%s: plan digest %s, want %s (the plan changed)", key, d, want[key])
				}
			}
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The entry count: MaxEntries plans, one more is refused with the limit
// that binds named (checked without making four billion entries).
func TestEntryCountAtMaxEntries(t *testing.T) {
	if err := checkCount(MaxEntries); err != nil {
		t.Errorf("%d entries: %v, want no error", MaxEntries, err)
	}
	err := checkCount(MaxEntries + 1)
	var limit *failure.LimitError
	if !errors.As(err, &limit) || !strings.Contains(err.Error(), "32 bits") || !strings.Contains(err.Error(), fmt.Sprint(MaxEntries+1)) {
		t.Errorf("%d entries: %v, want a failure.LimitError naming the 32-bit entry numbers", MaxEntries+1, err)
	}
}

// A part job of exactly MaxJobBytes (as bounded) passes; one more entry
// whose CRC-32 the part needs and it is refused, naming the part and the
// Map's limit.
func TestPartJobAtMaxJobBytes(t *testing.T) {
	p := &Plan{Strategy: StrategyChain, Entries: make([]PlacedEntry, 50_000)} // 5 digits an index, and a comma
	fit := (MaxJobBytes - jobOverhead) / 6
	part := Part{Number: 3, Kind: PartChain, Count: fit + 1, NeedCRC: make([]EntryIndex, fit)}
	if err := p.checkJobs([]Part{part}); err != nil {
		t.Errorf("%d CRCs needed: %v, want no error", fit, err)
	}
	part.NeedCRC = append(part.NeedCRC, 1)
	err := p.checkJobs([]Part{part})
	var limit *failure.LimitError
	if !errors.As(err, &limit) || !strings.Contains(err.Error(), "part 3") || !strings.Contains(err.Error(), "MaxInputBytesPerBatch") {
		t.Errorf("%d CRCs needed: %v, want a failure.LimitError naming part 3 and MaxInputBytesPerBatch", fit+1, err)
	}
}

// The bound checkJobs puts on a job holds for the jobs Encode writes: on
// seeded plans of every strategy (chain parts of thousands of entries
// included), each line is at most its part's NeedCRC times the digits of
// an index and a comma, plus jobOverhead.
func TestPartJobBoundHoldsForEncodedJobs(t *testing.T) {
	inputs := identityInputs()
	for _, name := range []string{"small-70000", "mixed-402"} {
		for _, s := range strategies {
			p := mustPlan(t, inputs[name], Options{Strategy: s, Workers: 100, PartsPerBatch: 8})
			enc, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			digits := len(fmt.Sprint(len(p.Entries)))
			sc := bufio.NewScanner(bytes.NewReader(enc.Parts))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var j PartJob
				if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
					t.Fatal(err)
				}
				need := len(j.NeedCRC)
				for _, c := range j.Carried {
					need += len(c.NeedCRC)
				}
				if bound := need*(digits+1) + jobOverhead; len(sc.Bytes()) > bound {
					t.Errorf("%s/%s: part %d's job is %d bytes, over its bound %d", name, s, j.Number, len(sc.Bytes()), bound)
				}
			}
		}
	}
}

// S3's largest object, 48.8 TiB, is the largest archive: entries whose
// headers and data alone are over it are refused before anything is
// planned, with the numbers, by every strategy; an archive just under it
// is planned, its parts within S3's part limits.
func TestArchiveAtS3sLargestObject(t *testing.T) {
	objects := func(n int, size int64) []Entry {
		es := make([]Entry, n)
		for i := range es {
			key := fmt.Sprintf("huge/%02d.bin", i)
			es[i] = Entry{Name: key, Source: Source{Bucket: "b", Key: key}, Size: size}
		}
		return es
	}
	over := objects(10, MaxArchiveSize/10) // the data alone is the limit; the headers pass it
	for _, s := range []Strategy{StrategyAuto, StrategyStream, StrategyDuo, StrategyChain} {
		_, err := Make(over, Options{Strategy: s, Workers: 100})
		var limit *failure.LimitError
		if !errors.As(err, &limit) || !strings.Contains(err.Error(), "48.8 TiB") || !strings.Contains(err.Error(), fmt.Sprint(int64(MaxArchiveSize))) ||
			!strings.Contains(err.Error(), "--split-size") {
			t.Errorf("%s over %d bytes: %v, want a failure.LimitError naming S3's largest object in bytes and --split-size", s, int64(MaxArchiveSize), err)
		}
	}
	// Just under: auto and stream plan it; a layout that cannot fit S3's
	// parts says so with the numbers.
	under := objects(10, MaxArchiveSize/10-1<<30)
	for _, s := range []Strategy{StrategyAuto, StrategyStream, StrategyDuo, StrategyChain} {
		p, err := Make(under, Options{Strategy: s, Workers: 100})
		var limit *failure.LimitError
		if err != nil && (s == StrategyAuto || s == StrategyStream || !errors.As(err, &limit)) {
			t.Errorf("%s, entries of %d bytes: %v", s, under[0].Size, err)
		}
		if err != nil {
			continue
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if len(p.Parts) > MaxParts || p.Size > MaxArchiveSize {
			t.Errorf("%s: %d parts, %d bytes: over S3's %d parts or %d bytes", s, len(p.Parts), p.Size, MaxParts, int64(MaxArchiveSize))
		}
	}
}

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// totalAllocated is every byte allocated so far.
func totalAllocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// What planning costs per entry, the input aside: a plan keeps a placed
// entry in 32 bytes and points into the input (a copy of every entry would
// be ~200 bytes an entry in each plan auto builds); checking names takes no
// map from name to entry (two of them, and a slice of path segments a name,
// would be ~200 bytes an entry, the largest allocation at millions). At ten
// million entries each byte here is 10 MB of the planner Lambda's 2,048.
func TestPlanMemoryPerEntry(t *testing.T) {
	const n = 200_000
	entries := small(n, 5)
	base := heapAfterGC()
	before := totalAllocated()
	if err := checkEntries(entries); err != nil {
		t.Fatal(err)
	}
	perEntry := float64(totalAllocated()-before) / n
	t.Logf("checking names: %.0f bytes allocated an entry", perEntry)
	if perEntry > 80 {
		t.Errorf("checking %d names allocated %.0f bytes an entry, want at most 80", n, perEntry)
	}
	for _, s := range strategies {
		p, err := Make(entries, Options{Strategy: s, Workers: 100, PartsPerBatch: 8})
		if err != nil {
			t.Fatal(err)
		}
		perEntry := float64(heapAfterGC()-base) / n
		t.Logf("%s: %.0f bytes kept an entry", s, perEntry)
		if perEntry > 48 {
			t.Errorf("%s: the plan keeps %.0f bytes an entry besides its input, want at most 48", s, perEntry)
		}
		runtime.KeepAlive(p)
	}
	runtime.KeepAlive(entries)
}

// Plans share the caller's entries, so what Make knows only for a plan
// stays out of them: an empty object's CRC-32 is 0 in the plan, and still
// unknown in the input.
func TestMakeLeavesInputEntries(t *testing.T) {
	entries := goldenEntries()
	for i := range entries {
		entries[i].CRC32 = CRC{}
	}
	for _, s := range strategies {
		p := mustPlan(t, entries, Options{Strategy: s, Workers: 2})
		for i := range p.Entries {
			if e := &p.Entries[i]; e.Size == 0 && e.CRC32 != KnownCRC(0) {
				t.Errorf("%s: plan's empty entry %q has CRC %v, want 00000000", s, e.Name, e.CRC32)
			}
		}
		for _, e := range entries {
			if e.CRC32.Known {
				t.Errorf("%s: Make set the input entry %q's CRC to %v", s, e.Name, e.CRC32)
			}
		}
	}
}

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
