package extract_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"testing"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/failure"
)

// TestExtractLargeDeflatedEntry: a DEFLATE entry decoding to more than the
// 64 MiB a worker buffers for one PutObject is streamed into a multipart
// upload of 16 MiB parts, completed with the entry's CRC-32; the same entry
// listed with a wrong CRC-32 is refused as corrupt, its open upload aborted
// and nothing written. (The only large-entry cases besides are the long ones.)
func TestExtractLargeDeflatedEntry(t *testing.T) {
	w := newWorld(t)
	data := bytes.Repeat([]byte("a large text entry, inflated by a worker in 16 MiB parts\n"), 80*mib/57+1)[:80*mib+5]
	var deflated bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestSpeed)
	if _, err := fw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	// archiveOf lists the entry with the given CRC-32.
	archiveOf := func(crc uint32) []byte {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		ew, err := zw.CreateRaw(&zip.FileHeader{Name: "big.txt", Method: zip.Deflate, CRC32: crc,
			CompressedSize64: uint64(deflated.Len()), UncompressedSize64: uint64(len(data))})
		if err == nil {
			_, err = ew.Write(deflated.Bytes())
		}
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}

	t.Run("right CRC-32", func(t *testing.T) {
		w.srv.PutObject(t, "src", "large/right.zip", archiveOf(crc(data)))
		res, err := w.extract(t, nil, "large/right.zip", "large/right/", extract.Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		w.same(t, "large/right/", map[string][]byte{"big.txt": data})
		if len(res.Objects) != 1 || res.Objects[0].Size != int64(len(data)) {
			t.Errorf("result lists %+v, want big.txt of %d bytes", res.Objects, len(data))
		}
	})
	t.Run("wrong CRC-32", func(t *testing.T) {
		w.srv.PutObject(t, "src", "large/wrong.zip", archiveOf(crc(data)^1))
		_, err := w.extract(t, nil, "large/wrong.zip", "large/wrong/", extract.Options{}, false)
		var ce *failure.ChecksumMismatchError
		if !errors.As(err, &ce) {
			t.Fatalf("got %v, want a ChecksumError", err)
		}
		w.nothingLeft(t, "large/wrong/")
	})
}
