package zipread

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// bsdtarArchive reads testdata/bsdtar/name (see gen.sh there).
func bsdtarArchive(t *testing.T, name string) (path string, b []byte) {
	t.Helper()
	path = filepath.Join("testdata", "bsdtar", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run sh gen.sh in testdata/bsdtar", err)
	}
	return path, b
}

// TestDotComponents: bsdtar -cf x.zip . names its entries "./", "./a",
// "./d/b"; 7-Zip, Info-ZIP and Go read them, so Verify lists them as
// warnings, no problem, and Extract writes "a" and "d/b" (and nothing for
// "./", the directory extracted into). "./a" beside "a" is one path twice:
// Verify warns, Extract refuses naming both.
func TestDotComponents(t *testing.T) {
	env := newEnv(t)
	path, b := bsdtarArchive(t, "dot.zip")
	want := readersAgree(t, path)
	a := env.open(t, "dot.zip", b)
	r, err := a.Verify(t.Context(), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		t.Errorf("problem: %v", p)
	}
	var warned []string
	for _, w := range r.Warnings {
		warned = append(warned, w.String())
	}
	const readPast = `name has a "." component, which 7-Zip, Info-ZIP and Go's archive/zip read past; get and extract write it as `
	if got, want := strings.Join(warned, "\n"), strings.Join([]string{
		`entry "./": name is the directory extracted into (a "." component, which 7-Zip, Info-ZIP and Go's archive/zip read past); get and extract skip it`,
		`entry "./a": ` + readPast + `"a"`,
		`entry "./d/": ` + readPast + `"d/"`,
		`entry "./d/b": ` + readPast + `"d/b"`,
	}, "\n"); got != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", got, want)
	}
	extractsAsRead(t, a, ExtractOptions{}, want, map[string]string{"./": "", "./a": "a", "./d/": "d/", "./d/b": "d/b"})

	path, b = bsdtarArchive(t, "dot-clash.zip")
	readersAgree(t, path)
	a = env.open(t, "dot-clash.zip", b)
	if r, err = a.Verify(t.Context(), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	const clash = `entry "a": name is "a" without its "." components, as is entry "./a"'s: get and extract refuse the archive`
	if !r.OK() || len(r.Warnings) != 2 || r.Warnings[1].String() != clash {
		t.Errorf("Verify: problems %v, warnings %v; want the second warning: %s", r.Problems, r.Warnings, clash)
	}
	dir := t.TempDir()
	_, err = a.Extract(t.Context(), dir, ExtractOptions{})
	if want := `entries "./a" and "a" would both be written to "a" (without their "." components); rename one`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Extract: %v, want %q", err, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("Extract refused but wrote %d files", len(left))
	}
}

// TestEntryPath: "." components are left out; every other unsafe name is
// still refused, also once they are.
func TestEntryPath(t *testing.T) {
	for _, tc := range []struct{ name, path, why string }{
		{"a", "a", ""},
		{"./a", "a", ""},
		{"a/./b", "a/b", ""},
		{"./d/", "d/", ""},
		{"././d/./b/", "d/b/", ""},
		{"./", "", ""},
		{".", "", "names the directory extracted into, not a file"},
		{"./../a", "", `has a ".." component`},
		{"a/./..", "", `has a ".." component`},
		{"/./a", "", "is an absolute path"},
		{"./a//b", "", "has an empty component"},
		{"../a", "", `has a ".." component`},
	} {
		p, err := EntryPath(tc.name)
		why := ""
		if err != nil {
			why = err.(*UnsafeNameError).Why
		}
		if p != tc.path || why != tc.why {
			t.Errorf("EntryPath(%q) = %q, %q; want %q, %q", tc.name, p, why, tc.path, tc.why)
		}
	}
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

// TestCheckDescriptor: each form of data descriptor is found where its writer
// put it, ambiguous bytes are read as the form that ends where the next
// record starts, and what is not a matching descriptor says what it holds.
func TestCheckDescriptor(t *testing.T) {
	const crc = 0x1cb81d66
	entry := &Entry{CRC32: crc, CompressedSize: 70, UncompressedSize: 3840}
	huge := &Entry{CRC32: crc, CompressedSize: 1<<32 + 5, UncompressedSize: 1<<32 + 5}
	empty := &Entry{}
	sigCRC := &Entry{CRC32: zipformat.DataDescriptorSignature, CompressedSize: 5, UncompressedSize: 5}
	le := binary.LittleEndian
	desc := func(signature bool, crc uint32, sizeLen int, csize, usize uint64) []byte {
		var b []byte
		if signature {
			b = le.AppendUint32(b, zipformat.DataDescriptorSignature)
		}
		b = le.AppendUint32(b, crc)
		if sizeLen == 8 {
			return le.AppendUint64(le.AppendUint64(b, csize), usize)
		}
		return le.AppendUint32(le.AppendUint32(b, uint32(csize)), uint32(usize))
	}
	// then is what follows a descriptor: the next local header.
	then := func(b []byte) []byte {
		b = le.AppendUint32(b, zipformat.LocalHeaderSignature)
		b = append(b, make([]byte, 20)...)
		return b[:min(len(b), zipformat.DataDescriptorMaxLen)]
	}
	for _, tc := range []struct {
		name       string
		e          *Entry
		b          []byte
		room       int64
		localZip64 bool
		want       int
		warning    string
		problem    string
	}{
		{"signature-4-byte-sizes", entry, then(desc(true, crc, 4, 70, 3840)), 16, false, 16, "", ""},
		{"no-signature-4-byte-sizes", entry, then(desc(false, crc, 4, 70, 3840)), 12, false, 12, "", ""},
		{"signature-zip64-local-extra", entry, then(desc(true, crc, 8, 70, 3840)), 24, true, 24, "", ""},
		{"no-signature-zip64-local-extra", entry, then(desc(false, crc, 8, 70, 3840)), 20, true, 20, "", ""},
		{"go-size-over-4g-no-local-extra", huge, desc(true, crc, 8, 1<<32+5, 1<<32+5), 24, false, 24, "", ""},
		{"8-byte-sizes-for-a-small-entry", entry, desc(true, crc, 8, 70, 3840), 24, false, 24, "", ""},
		{"4-byte-sizes-despite-local-extra", entry, then(desc(true, crc, 4, 70, 3840)), 16, true, 16, "", ""},
		{"empty-entry-reads-as-both-16", empty, desc(true, 0, 8, 0, 0), 16, false, 16, "", ""},
		{"empty-entry-reads-as-both-24", empty, desc(true, 0, 8, 0, 0), 24, false, 24, "", ""},
		{"crc-equals-the-signature", sigCRC, then(desc(false, zipformat.DataDescriptorSignature, 4, 5, 5)), 12, false, 12, "", ""},
		{"before-a-gap-takes-the-likeliest", entry, desc(true, crc, 4, 70, 3840), 17, false, 16, "", ""},
		{"wrong-crc", entry, then(desc(true, crc^1, 4, 70, 3840)), 16, false, 0, "",
			"data descriptor (16 bytes: signature, CRC-32, 4-byte sizes) says CRC-32 1cb81d67, compressed size 70, uncompressed size 3840; the central directory says 1cb81d66, 70, 3840"},
		// The right CRC-32 with other sizes: 7-Zip, Info-ZIP and Go read the
		// entry with the central directory's sizes, Java's ZipInputStream
		// rejects it.
		{"wrong-sizes-zip64-warns", entry, then(desc(false, crc, 8, 71, 3840)), 20, true, 20,
			"data descriptor (20 bytes: no signature, CRC-32, 8-byte sizes) says compressed size 71, uncompressed size 3840; the central directory says 70, 3840 (7-Zip, Info-ZIP and Go's archive/zip read the central directory's; Java's ZipInputStream and other streaming readers reject the entry)", ""},
		{"wrong-sizes-signature-warns", entry, desc(true, crc, 4, 70, 3841), 17, false, 16,
			"data descriptor (16 bytes: signature, CRC-32, 4-byte sizes) says compressed size 70, uncompressed size 3841; the central directory says 70, 3840 (7-Zip, Info-ZIP and Go's archive/zip read the central directory's; Java's ZipInputStream and other streaming readers reject the entry)", ""},
		{"wrong-sizes-no-signature-before-a-gap", entry, desc(false, crc, 4, 71, 3840), 17, false, 0, "",
			"data descriptor (12 bytes: no signature, CRC-32, 4-byte sizes) says CRC-32 1cb81d66, compressed size 71, uncompressed size 3840; the central directory says 1cb81d66, 70, 3840"},
		{"missing", entry, then(nil), 0, false, 0, "", "flag bit 3 promises a data descriptor after the data, but the next local header starts there"},
		{"cut-by-the-central-directory", entry, desc(true, crc, 4, 70, 3840)[:8], 8, false, 0, "",
			"flag bit 3 promises a data descriptor after the data, but only 8 bytes are left before the central directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, warning, problem := checkDescriptor(tc.e, tc.b, tc.room, tc.localZip64)
			if n != tc.want || warning != tc.warning || problem != tc.problem {
				t.Errorf("checkDescriptor = %d, %q, %q; want %d, %q, %q", n, warning, problem, tc.want, tc.warning, tc.problem)
			}
		})
	}
}
