package zipread

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

const testBucket = "zips"

// testEntry is an entry of a test archive.
type testEntry struct {
	name    string
	data    []byte
	deflate bool
}

var testTime = time.Date(2024, 5, 17, 10, 30, 42, 0, time.UTC)

// buildZip writes entries with archive/zip's CreateRaw, so the local headers
// carry CRC-32 and sizes and no data descriptor (as s3zip writes them).
func buildZip(t testing.TB, entries []testEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i, e := range entries {
		h := &zip.FileHeader{
			Name: e.name, Method: zip.Store, Modified: testTime.Add(time.Duration(i) * time.Minute),
			CRC32: crc32.ChecksumIEEE(e.data), UncompressedSize64: uint64(len(e.data)),
		}
		if strings.HasSuffix(e.name, "/") {
			h.SetMode(fs.ModeDir | 0o755)
		} else {
			h.SetMode(0o644)
		}
		body := e.data
		if e.deflate {
			var c bytes.Buffer
			fw, _ := flate.NewWriter(&c, flate.BestSpeed)
			fw.Write(e.data)
			fw.Close()
			body = c.Bytes()
			h.Method = zip.Deflate
		}
		h.CompressedSize64 = uint64(len(body))
		fw, err := w.CreateRaw(h)
		if err != nil {
			t.Fatalf("zip entry %q: %v", e.name, err)
		}
		if _, err := fw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type testEnv struct {
	srv    *s3test.Server
	client *s3.Client
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	srv := s3test.Start(t)
	srv.CreateBucket(t, testBucket)
	return &testEnv{srv: srv, client: srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})}
}

func (env *testEnv) open(t *testing.T, key string, b []byte) *Archive {
	t.Helper()
	env.srv.PutObject(t, testBucket, key, b)
	a, err := Open(t.Context(), env.client, testBucket, key)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return a
}

// checkExtracted compares the files under dir with the entries.
func checkExtracted(t *testing.T, dir string, a *Archive, entries []testEntry) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.name))
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("entry %q: %v", e.name, err)
			continue
		}
		if strings.HasSuffix(e.name, "/") {
			if !fi.IsDir() {
				t.Errorf("entry %q: not a directory", e.name)
			}
		} else {
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, e.data) {
				t.Errorf("entry %q: extracted %d bytes (err %v), want %d equal bytes", e.name, len(got), err, len(e.data))
			}
		}
	}
	for _, e := range a.Entries {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(e.Name)))
		if err == nil && !fi.ModTime().Equal(e.Modified) {
			t.Errorf("entry %q: modification time %v, want %v", e.Name, fi.ModTime(), e.Modified)
		}
	}
}

func TestVerifyAndExtractGoodArchives(t *testing.T) {
	env := newEnv(t)
	many := make([]testEntry, 66_000) // > 65,535 entries: ZIP64 end records
	for i := range many {
		many[i] = testEntry{name: fmt.Sprintf("many/%05d", i)}
	}
	for _, tc := range []struct {
		name    string
		entries []testEntry
		opts    VerifyOptions
		zip64   bool
		extract bool
	}{
		{name: "plain", extract: true, entries: []testEntry{
			{name: "a.txt", data: []byte("hello, s3zip\n")},
			{name: "b/c.bin", data: s3test.Bytes(uint64(1), 100_000)},
			{name: "b/d.bin", data: s3test.Bytes(uint64(2), 3)},
		}},
		{name: "empty-entries", extract: true, entries: []testEntry{
			{name: "empty1"}, {name: "x/empty2"}, {name: "full", data: []byte("x")}, {name: "empty3"},
		}},
		{name: "directories", extract: true, entries: []testEntry{
			{name: "d/"}, {name: "d/e/"}, {name: "d/e/f.txt", data: []byte("f")}, {name: "g/"},
		}},
		{name: "unicode-names", extract: true, entries: []testEntry{
			{name: "ünïcødé/日本語.txt", data: []byte("こんにちは")}, {name: "emoji-🗜️.bin", data: s3test.Bytes(uint64(3), 10)},
		}},
		{name: "deflated-entry", extract: true, entries: []testEntry{
			{name: "z.txt", data: bytes.Repeat([]byte("compress me "), 10_000), deflate: true}, {name: "s.bin", data: s3test.Bytes(uint64(4), 5000)},
		}},
		{name: "chunks-and-runs", extract: true, opts: VerifyOptions{ChunkSize: 64 << 10, CoalesceSize: 100 << 10, Concurrency: 4},
			entries: []testEntry{
				{name: "big1", data: s3test.Bytes(uint64(5), 300_000)}, {name: "s1", data: s3test.Bytes(uint64(6), 50_000)},
				{name: "s2", data: s3test.Bytes(uint64(7), 60_000)}, {name: "big2", data: s3test.Bytes(uint64(8), 64<<10+1)},
				{name: "s3", data: s3test.Bytes(uint64(9), 1)}, {name: "big3", data: s3test.Bytes(uint64(10), 200_000)},
			}},
		{name: "zip64-many-entries", entries: many, zip64: true, extract: true},
		{name: "no-entries", extract: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := env.open(t, tc.name+".zip", buildZip(t, tc.entries))
			if len(a.Entries) != len(tc.entries) || a.Zip64 != tc.zip64 {
				t.Fatalf("Open: %d entries, zip64 %v; want %d, %v", len(a.Entries), a.Zip64, len(tc.entries), tc.zip64)
			}
			r, err := a.Verify(t.Context(), tc.opts)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			for _, p := range r.Problems {
				t.Errorf("problem: %v", p)
			}
			var want int64
			for _, e := range tc.entries {
				if e.deflate {
					var c bytes.Buffer
					fw, _ := flate.NewWriter(&c, flate.BestSpeed)
					fw.Write(e.data)
					fw.Close()
					want += int64(c.Len())
				} else {
					want += int64(len(e.data))
				}
			}
			if r.BytesChecked != want {
				t.Errorf("BytesChecked = %d, want %d", r.BytesChecked, want)
			}
			if !tc.extract {
				return
			}
			dir := t.TempDir()
			res, err := a.Extract(t.Context(), dir, ExtractOptions{Concurrency: tc.opts.Concurrency, ChunkSize: tc.opts.ChunkSize, CoalesceSize: tc.opts.CoalesceSize})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if res.Entries != len(tc.entries) {
				t.Errorf("Extract: %d entries, want %d", res.Entries, len(tc.entries))
			}
			checkExtracted(t, dir, a, tc.entries)
		})
	}
}

// localHeaderOf returns the offset of the local header of the entry named name.
func localHeaderOf(t *testing.T, b []byte, name string) int {
	t.Helper()
	sig := binary.LittleEndian.AppendUint32(nil, zipformat.LocalHeaderSignature)
	for off := 0; ; {
		i := bytes.Index(b[off:], sig)
		if i < 0 {
			t.Fatalf("no local header for %q", name)
		}
		off += i
		n := int(binary.LittleEndian.Uint16(b[off+26:]))
		if string(b[off+30:off+30+n]) == name {
			return off
		}
		off += 4
	}
}

func dataOf(t *testing.T, b []byte, name string) int {
	lh := localHeaderOf(t, b, name)
	return lh + zipformat.LocalHeaderLen + int(binary.LittleEndian.Uint16(b[lh+26:])) + int(binary.LittleEndian.Uint16(b[lh+28:]))
}

func TestVerifyCatchesCorruption(t *testing.T) {
	env := newEnv(t)
	good := []testEntry{
		{name: "first.txt", data: []byte("the first entry")},
		{name: "second.bin", data: s3test.Bytes(uint64(11), 20_000)},
		{name: "third.txt", data: []byte("the third entry")},
	}
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, b []byte) []byte
		want    string // in a problem, or in Open's error
		entry   string // the problem's entry, when it names one
		// extracts: the archive is still extractable (a stray byte before the
		// first entry or a wrong count in the end record leaves every entry intact).
		extracts bool
	}{
		{"flipped-data-byte", func(t *testing.T, b []byte) []byte {
			b[dataOf(t, b, "second.bin")+777] ^= 0x40
			return b
		}, "data has CRC-32", "second.bin", false},
		{"local-header-crc-differs", func(t *testing.T, b []byte) []byte {
			b[localHeaderOf(t, b, "third.txt")+14] ^= 1
			return b
		}, "local header CRC-32", "third.txt", false},
		{"local-header-other-name", func(t *testing.T, b []byte) []byte {
			b[localHeaderOf(t, b, "first.txt")+30] = 'F'
			return b
		}, `local header name "First.txt"`, "first.txt", false},
		{"data-descriptor-flag", func(t *testing.T, b []byte) []byte {
			b[localHeaderOf(t, b, "second.bin")+6] |= zipformat.FlagDataDescriptor
			return b
		}, "data descriptor", "second.bin", false},
		{"local-header-size-differs", func(t *testing.T, b []byte) []byte {
			b[localHeaderOf(t, b, "second.bin")+18]++
			return b
		}, "local header compressed size", "second.bin", false},
		{"gap-before-entry", func(t *testing.T, b []byte) []byte {
			// Move every local header offset in the central directory up by one
			// and insert a byte: the layout has a one-byte hole.
			lh := localHeaderOf(t, b, "first.txt")
			out := append([]byte{0}, b[lh:]...)
			return fixOffsets(t, out, 1)
		}, "belong to no entry", "first.txt", true},
		{"byte-after-data-descriptor", func(t *testing.T, _ []byte) []byte {
			// archive/zip's CreateHeader writes a 16-byte data descriptor
			// after each entry's data (valid: see TestThirdPartyDataDescriptors);
			// one byte more before the next entry belongs to nothing.
			var buf bytes.Buffer
			w := zip.NewWriter(&buf)
			for _, e := range good {
				fw, _ := w.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
				fw.Write(e.data)
			}
			w.Close()
			b := buf.Bytes()
			at := localHeaderOf(t, b, "second.bin")
			b = append(b[:at:at], append([]byte{0}, b[at:]...)...)
			return fixOffsetsAfter(t, b, at, 1)
		}, "1 bytes from", "second.bin", true},
		{"truncated-archive", func(t *testing.T, b []byte) []byte {
			return b[:len(b)-200]
		}, "no end of central directory record", "", false},
		{"bad-eocd-offset", func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-6:], binary.LittleEndian.Uint32(b[len(b)-6:])-1)
			return b
		}, "but the end records start at", "", false},
		{"bad-eocd-count", func(t *testing.T, b []byte) []byte {
			binary.LittleEndian.PutUint16(b[len(b)-12:], 2)
			binary.LittleEndian.PutUint16(b[len(b)-14:], 2)
			return b
		}, "central directory is", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.corrupt(t, buildZip(t, good))
			key := tc.name + ".zip"
			env.srv.PutObject(t, testBucket, key, b)
			a, err := Open(t.Context(), env.client, testBucket, key)
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open: %v; want a *FormatError with %q", err, tc.want)
				}
				return
			}
			r, err := a.Verify(t.Context(), VerifyOptions{})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			found := false
			for _, p := range r.Problems {
				t.Logf("problem: %v", p)
				if strings.Contains(p.What, tc.want) && p.Entry == tc.entry {
					found = true
				}
			}
			if !found {
				t.Errorf("Verify found no problem %q for entry %q", tc.want, tc.entry)
			}
			if _, err := a.Extract(t.Context(), t.TempDir(), ExtractOptions{}); (err == nil) != tc.extracts {
				t.Errorf("Extract: %v; want success %v", err, tc.extracts)
			}
		})
	}
}

// fixOffsets adds delta to every central directory local header offset and to
// the end record's central directory offset of a small non-ZIP64 archive.
func fixOffsets(t *testing.T, b []byte, delta uint32) []byte {
	t.Helper()
	return fixOffsetsAfter(t, b, 0, delta)
}

// fixOffsetsAfter is fixOffsets for the local headers at or after from only
// (bytes were inserted at from).
func fixOffsetsAfter(t *testing.T, b []byte, from int, delta uint32) []byte {
	t.Helper()
	end := len(b) - zipformat.EndLen
	cd := int(binary.LittleEndian.Uint32(b[end+16:])) + int(delta)
	binary.LittleEndian.PutUint32(b[end+16:], uint32(cd))
	for off := cd; off < end; {
		if binary.LittleEndian.Uint32(b[off:]) != zipformat.CentralHeaderSignature {
			t.Fatalf("no central header at %d", off)
		}
		if lh := binary.LittleEndian.Uint32(b[off+42:]); int(lh) >= from {
			binary.LittleEndian.PutUint32(b[off+42:], lh+delta)
		}
		off += zipformat.CentralHeaderLen + int(binary.LittleEndian.Uint16(b[off+28:])) + int(binary.LittleEndian.Uint16(b[off+30:])) + int(binary.LittleEndian.Uint16(b[off+32:]))
	}
	return b
}

func crcOf(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// TestTrailingBytesAfterEndRecord: bsdtar writing to a pipe pads the archive
// with zeros after the end of central directory record; 7-Zip (with a
// warning), Info-ZIP and Go read it correctly, so Open finds the record
// before them, Verify lists them as a warning and no problem, and Extract
// writes what the readers read.
func TestTrailingBytesAfterEndRecord(t *testing.T) {
	env := newEnv(t)
	path, b := bsdtarArchive(t, "pipe-padded.zip")
	want := readersAgree(t, path)
	a := env.open(t, "pipe-padded.zip", b)
	if a.Trailing != 9735 || !a.TrailingZeros || len(a.Entries) != 3 {
		t.Fatalf("Open: %d trailing bytes (zeros: %v), %d entries; want 9735 zeros after the end record, 3 entries", a.Trailing, a.TrailingZeros, len(a.Entries))
	}
	r, err := a.Verify(t.Context(), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		t.Errorf("problem: %v", p)
	}
	const warning = `9735 bytes after the end of central directory record belong to no record (all zeros, as bsdtar pads an archive it writes to a pipe; Info-ZIP and Go's archive/zip ignore them, 7-Zip warns of a "Tail Size")`
	if len(r.Warnings) != 1 || r.Warnings[0] != (Problem{Offset: 505, What: warning}) {
		t.Errorf("warnings %+v, want one at offset 505: %s", r.Warnings, warning)
	}
	extractsAsRead(t, a, ExtractOptions{}, want, nil)
}

// brokenDescriptors are testdata/descriptors' bad- and warn- archives: a
// reader that rejects each (7-Zip and Info-ZIP read them all without a
// word, and Go's archive/zip checks a descriptor's CRC-32 but not its sizes)
// and what Verify must list: a problem for a bad- archive, a warning for a
// warn- one, which 7-Zip, Info-ZIP and Go read correctly.
var brokenDescriptors = map[string]struct{ reader, entry, what string }{
	"bad-descriptor-crc.zip": {zipcheck.ReaderGo, "readme.txt",
		"data descriptor (16 bytes: signature, CRC-32, 4-byte sizes) says CRC-32 b8fc7b7d, compressed size 70, uncompressed size 3840; the central directory says b8fc7b82, 70, 3840"},
	"warn-descriptor-sizes.zip": {zipcheck.ReaderJavaZipInputStream, "readme.txt",
		"data descriptor (16 bytes: signature, CRC-32, 4-byte sizes) says compressed size 67, uncompressed size 3840; the central directory says 66, 3840 (7-Zip, Info-ZIP and Go's archive/zip read the central directory's; Java's ZipInputStream and other streaming readers reject the entry)"},
	"bad-descriptor-missing.zip": {zipcheck.ReaderGo, "data/noise.bin",
		"flag bit 3 promises a data descriptor after the data, but the next local header starts there"},
}

// readersAgree reads the archive at path with Go's archive/zip, Info-ZIP
// unzip and 7-Zip and returns what they all saw, by name.
func readersAgree(t *testing.T, path string) []zipcheck.Entry {
	t.Helper()
	var first []zipcheck.Entry
	for _, reader := range []string{zipcheck.ReaderGo, zipcheck.ReaderUnzip, zipcheck.Reader7Zip} {
		got, err := zipcheck.CheckReader(reader, path)
		if err != nil {
			t.Fatalf("a valid archive: %v", err)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
		if first == nil {
			first = got
			continue
		}
		if len(got) != len(first) {
			t.Fatalf("%s sees %d entries, %s %d", reader, len(got), zipcheck.ReaderGo, len(first))
		}
		for i := range got {
			if got[i].Dir && first[i].Dir {
				got[i].SHA256, got[i].Size = first[i].SHA256, first[i].Size // unzip hashes nothing for a directory
			}
			if got[i] != first[i] {
				t.Fatalf("%s sees %+v, %s %+v", reader, got[i], zipcheck.ReaderGo, first[i])
			}
		}
	}
	return first
}

// TestThirdPartyDataDescriptors: archives that Python's zipfile, Info-ZIP
// zip, libarchive's bsdtar, 7-Zip, Java's ZipOutputStream and Go's
// archive/zip wrote with data descriptors (testdata/descriptors, see gen.go
// there), which 7-Zip, Info-ZIP and Go read correctly, verify clean whichever
// descriptor form their writer chose (with and without signature, 4- and
// 8-byte sizes), and get's Extract writes what those readers read; both
// through coalesced runs and through a GET per entry with STORED entries in
// chunks. The broken ones have the problem Verify must list; those Java's
// ZipInputStream rejects but 7-Zip, Info-ZIP and Go read (warn-) verify
// without problems, with the warning, and extract.
func TestThirdPartyDataDescriptors(t *testing.T) {
	env := newEnv(t)
	paths, err := filepath.Glob(filepath.Join("testdata", "descriptors", "*.zip"))
	if err != nil || len(paths) < 10 {
		t.Fatalf("%d archives in testdata/descriptors (%v); run go run gen.go there", len(paths), err)
	}
	small := VerifyOptions{ChunkSize: 4 << 10, CoalesceSize: 1}
	forms := map[int64]bool{} // lengths of the valid archives' descriptors
	for _, path := range paths {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".zip"), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			broken, listed := brokenDescriptors[name]
			isBroken, warns := strings.HasPrefix(name, "bad-"), strings.HasPrefix(name, "warn-")
			if listed != (isBroken || warns) {
				t.Fatalf("a bad- or warn- archive needs an entry in brokenDescriptors, and only those")
			}
			var want []zipcheck.Entry
			if listed {
				if _, err := zipcheck.CheckReader(broken.reader, path); err == nil {
					t.Fatalf("%s reads the archive: it is not broken", broken.reader)
				} else {
					t.Logf("rejected: %v", err)
				}
			}
			if !isBroken {
				want = readersAgree(t, path)
			}
			a := env.open(t, name, b)
			descriptors := 0
			for _, e := range a.Entries {
				if e.Flags&zipformat.FlagDataDescriptor != 0 {
					descriptors++
				}
			}
			if descriptors == 0 {
				t.Fatalf("no entry has a data descriptor")
			}
			if !isBroken {
				for _, n := range descriptorLengths(t, a, b) {
					forms[n] = true
				}
			}
			for _, opts := range []VerifyOptions{{}, small} {
				r, err := a.Verify(t.Context(), opts)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if r.Descriptors != descriptors {
					t.Errorf("Verify %+v: %d data descriptors, want %d", opts, r.Descriptors, descriptors)
				}
				expected, unexpected := r.Problems, r.Warnings
				if !isBroken {
					expected, unexpected = r.Warnings, r.Problems
				}
				for _, p := range unexpected {
					t.Errorf("Verify %+v: unexpected: %v", opts, p)
				}
				found := false
				for _, p := range expected {
					t.Logf("Verify %+v: %v", opts, p)
					found = found || p.Entry == broken.entry && p.What == broken.what
				}
				if listed && !found {
					t.Errorf("Verify %+v: nothing for %q says: %s", opts, broken.entry, broken.what)
				}
				if !listed && len(expected) > 0 {
					t.Errorf("Verify %+v: %d warnings, want none", opts, len(expected))
				}
			}
			if isBroken {
				return
			}
			for _, opts := range []ExtractOptions{{}, {ChunkSize: small.ChunkSize, CoalesceSize: small.CoalesceSize}} {
				extractsAsRead(t, a, opts, want, nil)
			}
		})
	}
	for _, n := range []int64{12, 16, 20, 24} {
		if !forms[n] {
			t.Errorf("no valid archive in testdata/descriptors has a %d-byte data descriptor", n)
		}
	}
}

// descriptorLengths measures, for each entry with flag bit 3, the bytes
// between the end of its data (as Go's archive/zip finds it) and the next
// local header or the central directory.
func descriptorLengths(t *testing.T, a *Archive, b []byte) []int64 {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	byOffset := append([]Entry(nil), a.Entries...)
	sort.Slice(byOffset, func(i, j int) bool { return byOffset[i].Offset < byOffset[j].Offset })
	next := map[string]int64{}
	for i, e := range byOffset {
		next[e.Name] = a.CentralDirStart
		if i+1 < len(byOffset) {
			next[e.Name] = byOffset[i+1].Offset
		}
	}
	var lengths []int64
	for _, f := range zr.File {
		if f.Flags&zipformat.FlagDataDescriptor == 0 {
			continue
		}
		start, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, next[f.Name]-start-int64(f.CompressedSize64))
	}
	return lengths
}

// TestVerifyEntryOver4GiB checks an archive in s3zip's own layout (local
// headers from package plan, central headers from internal/zipformat, which
// plan writes them with) with a STORED entry of 4 GiB + 5 bytes of zeros, followed
// by an entry whose local header offset needs ZIP64 too. The archive is
// written as a sparse file straight into versitygw's POSIX backend, so it
// costs no disk and no upload; Verify reads all of it over HTTP.
func TestVerifyEntryOver4GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 4 GiB over loopback")
	}
	env := newEnv(t)
	const bigSize = 1<<32 + 5
	mod := time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC)
	big := &plan.PlacedEntry{Entry: &plan.Entry{Name: "huge/zeros.bin", Size: bigSize, ModTime: mod}}
	small := &plan.PlacedEntry{Entry: &plan.Entry{Name: "after.txt", Size: 5, ModTime: mod}}
	smallData := []byte("after")
	bigCRC, smallCRC := zipformat.ZeroCRC(bigSize), crcOf(smallData)

	path := filepath.Join(env.srv.DataDir(), testBucket, "big.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lh := plan.AppendLocalHeader(nil, big, bigCRC)
	big.HeaderLen = int64(len(lh))
	small.Offset = big.End()
	lh2 := plan.AppendLocalHeader(nil, small, smallCRC)
	small.HeaderLen = int64(len(lh2))
	cdStart := small.End()
	cd := appendCentralHeader(nil, big, bigCRC)
	cd = appendCentralHeader(cd, small, smallCRC)
	end := zipformat.AppendEndRecords(cd, 2, cdStart, int64(len(cd)))
	for _, w := range []struct {
		off int64
		b   []byte
	}{{0, lh}, {small.Offset, lh2}, {small.DataOffset(), smallData}, {cdStart, end}} {
		if _, err := f.WriteAt(w.b, w.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	a, err := Open(t.Context(), env.client, testBucket, "big.zip")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if len(a.Entries) != 2 || a.Entries[0].UncompressedSize != bigSize || a.Entries[1].Offset != small.Offset || !a.Entries[1].Zip64 {
		t.Fatalf("Open: entries %+v", a.Entries)
	}
	r, err := a.Verify(t.Context(), VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, p := range r.Problems {
		t.Errorf("problem: %v", p)
	}
	if r.BytesChecked != bigSize+5 || r.Zip64Entries != 2 {
		t.Errorf("report: %d bytes checked, %d ZIP64 entries; want %d, 2", r.BytesChecked, r.Zip64Entries, int64(bigSize+5))
	}
	t.Logf("verified %d bytes in %v", r.BytesChecked, time.Since(start))
}

// appendCentralHeader appends the central directory header of e, a STORED
// entry whose data has CRC-32 crc, to dst.
func appendCentralHeader(dst []byte, e *plan.PlacedEntry, crc uint32) []byte {
	return zipformat.AppendCentralHeader(dst, &zipformat.Header{Name: e.Name, ModTime: e.ModTime, CRC32: crc,
		CompressedSize: e.Size, UncompressedSize: e.Size, Offset: e.Offset})
}

// TestVerifyGoDataDescriptorOver4GiB: Go's archive/zip streams an entry of
// 4 GiB + 5 bytes with CreateHeader: nothing about its size in the local
// header (no ZIP64 extra field: it is written before the data), a 24-byte
// data descriptor with 8-byte sizes after the data, ZIP64 in the central
// directory. Zeros deflated at BestSpeed keep the archive at ~5 MB; Verify
// inflates all of it to check the CRC-32.
func TestVerifyGoDataDescriptorOver4GiB(t *testing.T) {
	if os.Getenv("S3ZIP_LONG") != "1" {
		// ~4 minutes of the race-detected make test; make test-long runs it
		// beside the end-to-end long cases, CI with them.
		t.Skip("deflates and inflates 4 GiB: run with S3ZIP_LONG=1 (make test-long)")
	}
	env := newEnv(t)
	const bigSize = 1<<32 + 5
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	w.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) { return flate.NewWriter(out, flate.BestSpeed) })
	fw, err := w.CreateHeader(&zip.FileHeader{Name: "huge/zeros.bin", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for n := int64(0); n < bigSize; {
		k, err := fw.Write(zeros[:min(int64(len(zeros)), bigSize-n)])
		if err != nil {
			t.Fatal(err)
		}
		n += int64(k)
	}
	if fw, err = w.CreateHeader(&zip.FileHeader{Name: "after.txt", Method: zip.Store}); err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte("after"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	a := env.open(t, "go-big.zip", b)
	if got := descriptorLengths(t, a, b); len(got) != 2 || got[0] != 24 || got[1] != 16 {
		t.Fatalf("archive/zip wrote data descriptors of %v bytes, want [24 16]", got)
	}
	if h := b[a.Entries[0].Offset:]; binary.LittleEndian.Uint16(h[28:]) != 0 {
		t.Fatalf("archive/zip wrote an extra field in the local header")
	}
	start := time.Now()
	r, err := a.Verify(t.Context(), VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, p := range r.Problems {
		t.Errorf("problem: %v", p)
	}
	if r.Descriptors != 2 || r.Zip64Entries != 1 {
		t.Errorf("report: %d data descriptors, %d ZIP64 entries; want 2, 1", r.Descriptors, r.Zip64Entries)
	}
	t.Logf("%d-byte archive verified in %v", len(b), time.Since(start))
}
