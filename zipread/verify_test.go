package zipread

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/zipformat"
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

func TestExtractRefusesUnsafeNames(t *testing.T) {
	env := newEnv(t)
	for _, tc := range []struct{ name, entry string }{
		{"parent-dir", "../evil.txt"},
		{"nested-parent-dir", "a/../../evil.txt"},
		{"absolute", "/tmp/evil.txt"},
		{"backslash", `a\..\..\evil.txt`},
		{"drive-letter", "C:/evil.txt"},
		{"dot-then-parent-dir", "./../evil.txt"}, // "." components alone are read past (TestDotComponents)
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := env.open(t, tc.name+".zip", buildZip(t, []testEntry{{name: "ok.txt", data: []byte("ok")}, {name: tc.entry, data: []byte("evil")}}))
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			_, err := a.Extract(t.Context(), dir, ExtractOptions{})
			var ue *UnsafeNameError
			if !errors.As(err, &ue) {
				t.Fatalf("Extract: %v; want an *UnsafeNameError", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "ok.txt")); err == nil {
				t.Errorf("Extract wrote ok.txt before refusing the archive")
			}
			if _, err := os.Stat(filepath.Join(parent, "evil.txt")); err == nil {
				t.Errorf("Extract wrote outside its directory")
			}
			r, err := a.Verify(t.Context(), VerifyOptions{})
			if err != nil || r.OK() {
				t.Errorf("Verify: %v, %d problems; want the unsafe name reported", err, len(r.Problems))
			}
		})
	}
	t.Run("symlink-escape", func(t *testing.T) {
		a := env.open(t, "symlink.zip", buildZip(t, []testEntry{{name: "link/evil.txt", data: []byte("evil")}}))
		dir, outside := t.TempDir(), t.TempDir()
		if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Extract(t.Context(), dir, ExtractOptions{Overwrite: true}); err == nil {
			t.Errorf("Extract followed a symbolic link out of its directory")
		}
		if _, err := os.Stat(filepath.Join(outside, "evil.txt")); err == nil {
			t.Errorf("Extract wrote through a symbolic link outside its directory")
		}
	})
}

func TestExtractOverwrite(t *testing.T) {
	env := newEnv(t)
	entries := []testEntry{{name: "d/f.txt", data: []byte("new content")}}
	a := env.open(t, "o.zip", buildZip(t, entries))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	os.WriteFile(filepath.Join(dir, "d", "f.txt"), []byte("old"), 0o644)
	if _, err := a.Extract(t.Context(), dir, ExtractOptions{}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Extract over an existing file: %v; want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "d", "f.txt")); string(got) != "old" {
		t.Fatalf("the existing file was changed to %q", got)
	}
	if _, err := a.Extract(t.Context(), dir, ExtractOptions{Overwrite: true}); err != nil {
		t.Fatalf("Extract with Overwrite: %v", err)
	}
	checkExtracted(t, dir, a, entries)
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a.txt", true}, {"a/b/c", true}, {"dir/", true}, {"ünï/日本", true}, {"a..b", true},
		{"", false}, {"../x", false}, {"a/..", false}, {"/x", false}, {`a\b`, false},
		{"c:x", false}, {"a//b", false}, {"a/./b", false}, {"a\x00b", false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func crcOf(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// An archive holding a file "sub" and an entry under "sub/" (one made
// elsewhere: s3zip create refuses it) cannot be extracted to a file system
// whole: Extract refuses it, naming both, before it writes anything, in
// either order of the entries.
func TestExtractRefusesAFileThatIsAlsoAFolder(t *testing.T) {
	env := newEnv(t)
	for _, tc := range []struct {
		name    string
		entries []testEntry
		says    string
	}{
		{"file-first", []testEntry{{name: "ok.txt", data: []byte("ok")}, {name: "sub", data: []byte("a file")}, {name: "sub/x", data: []byte("under it")}}, `entries "sub" and "sub/x"`},
		{"folder-first", []testEntry{{name: "ok.txt", data: []byte("ok")}, {name: "sub/x", data: []byte("under it")}, {name: "sub", data: []byte("a file")}}, `entries "sub" and "sub/x"`},
		{"folder-entry", []testEntry{{name: "ok.txt", data: []byte("ok")}, {name: "sub/", data: nil}, {name: "sub", data: []byte("a file")}}, `entries "sub" and "sub/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := env.open(t, "clash-"+tc.name+".zip", buildZip(t, tc.entries))
			dir := t.TempDir()
			_, err := a.Extract(t.Context(), dir, ExtractOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Extract: %v; want a refusal naming both entries (%s)", err, tc.says)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("Extract wrote %d entries before refusing the archive (%s first)", len(left), left[0].Name())
			}
		})
	}
}
