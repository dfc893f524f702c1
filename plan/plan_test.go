package plan

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
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
