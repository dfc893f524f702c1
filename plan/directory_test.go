package plan

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

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

// TestCoalesceKeepsDirectoryParts: the two-level assembly merges the
// workers' parts into chains to fit S3's 10,000 parts, and leaves the
// finalizer's directory parts as they are, counting them in the limit.
func TestCoalesceKeepsDirectoryParts(t *testing.T) {
	var parts []Part
	pos := int64(0)
	for range MaxParts {
		parts = append(parts, Part{Kind: PartUpload, Start: pos, End: pos + MinPartSize})
		pos += MinPartSize
	}
	for _, size := range []int64{8 * MiB, 8 * MiB, 100} {
		parts = append(parts, Part{Kind: PartUpload, Start: pos, End: pos + size, Final: true})
		pos += size
	}
	out := coalesce(parts)
	if len(out) > MaxParts {
		t.Fatalf("coalesced to %d parts, over %d", len(out), MaxParts)
	}
	finals := out[firstFinal(out):]
	if len(finals) != 3 || finals[0].Start != MaxParts*MinPartSize || finals[2].End != pos {
		t.Fatalf("final parts after coalescing: %+v, want the 3 directory parts unchanged", finals)
	}
	for _, f := range finals {
		if f.Kind != PartUpload || !f.Final {
			t.Fatalf("final part %+v became a %s part", f, f.Kind)
		}
	}
}
