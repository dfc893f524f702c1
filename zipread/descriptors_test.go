package zipread

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
	"github.com/s3zip/s3zip/internal/zipformat"
)

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
