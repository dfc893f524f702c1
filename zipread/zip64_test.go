package zipread

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

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
