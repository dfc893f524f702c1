package zipformat

import (
	"archive/zip"
	"bytes"
	"io"
	"testing"
	"time"
)

// The encoders write exactly the sizes the size functions promise (the
// planner places every byte by them), for plain and ZIP64 entries.
func TestRecordSizes(t *testing.T) {
	mod := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	for _, h := range []Header{
		{Name: "a.txt", ModTime: mod, CompressedSize: 5, UncompressedSize: 5},
		{Name: "dir/", ModTime: mod, Dir: true},
		{Name: "big", ModTime: mod, CompressedSize: 5 << 30, UncompressedSize: 5 << 30, Offset: 1},
		{Name: "far", ModTime: mod, CompressedSize: 1, UncompressedSize: 1, Offset: 5 << 30},
		{Name: "edge", ModTime: mod, CompressedSize: Uint32Max, UncompressedSize: Uint32Max},
		{Name: "kept.html", ModTime: mod, CompressedSize: 3, UncompressedSize: 3, Mode: 0o755, CentralExtra: string(keptExtra(t))},
	} {
		if got, want := int64(len(AppendLocalHeader(nil, &h))), LocalHeaderSize(len(h.Name), h.Zip64Sizes()); got != want {
			t.Errorf("%s: local header %d bytes, LocalHeaderSize %d", h.Name, got, want)
		}
		if got, want := int64(len(AppendCentralHeader(nil, &h))), CentralHeaderSize(len(h.Name), len(h.CentralExtra), h.Zip64Sizes(), h.Offset); got != want {
			t.Errorf("%s: central header %d bytes, CentralHeaderSize %d", h.Name, got, want)
		}
	}
	for _, c := range []struct {
		entries          int
		cdOffset, cdSize int64
	}{{1, 100, 50}, {Uint16Max, 100, 50}, {1, 5 << 30, 50}} {
		zip64 := NeedsZip64End(c.entries, c.cdOffset, c.cdSize)
		if got, want := int64(len(AppendEndRecords(nil, c.entries, c.cdOffset, c.cdSize))), EndRecordsSize(zip64); got != want {
			t.Errorf("%+v: end records %d bytes, EndRecordsSize %d", c, got, want)
		}
	}
}

// A one-entry archive written with these encoders is one Go's archive/zip
// reads back: name, time, CRC, size, content.
func TestArchiveZipReadsIt(t *testing.T) {
	data := []byte("hello, zip")
	h := Header{Name: "greeting.txt", ModTime: time.Date(2030, 1, 2, 3, 4, 6, 0, time.UTC),
		CRC32: 0x1ce1e79c, CompressedSize: int64(len(data)), UncompressedSize: int64(len(data))}
	out := AppendLocalHeader(nil, &h)
	out = append(out, data...)
	cd := int64(len(out))
	out = AppendCentralHeader(out, &h)
	out = AppendEndRecords(out, 1, cd, int64(len(out))-cd)

	r, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		t.Fatal(err)
	}
	f := r.File[0]
	if f.Name != h.Name || !f.Modified.Equal(h.ModTime) || f.CRC32 != h.CRC32 || f.UncompressedSize64 != uint64(len(data)) {
		t.Errorf("read back %s %v crc %08x size %d", f.Name, f.Modified, f.CRC32, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc) // checks the CRC at EOF
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("content %q, %v", got, err)
	}
	if d, c := MSDOSTime(h.ModTime); !TimeFromMSDOS(d, c).Equal(h.ModTime) {
		t.Errorf("MS-DOS time round trip: %v", TimeFromMSDOS(d, c))
	}
}
