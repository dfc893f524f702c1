package zipformat

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func keptExtra(t *testing.T) []byte {
	t.Helper()
	b, err := AppendMetadataExtra(nil, &Metadata{ContentType: "text/html; charset=utf-8", User: map[string]string{"mtime": "1700000000.5"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What is encoded is what is read back, and equal metadata is equal bytes.
func TestMetadataExtraRoundTrip(t *testing.T) {
	for _, m := range []Metadata{
		{},
		{ContentType: "text/css"},
		{ContentType: "application/json", ContentEncoding: "gzip", CacheControl: "max-age=3600, public",
			User: map[string]string{"mtime": "1614523456.123456789", "mode": "33188", "uid": "1000", "gid": "1000", "empty": ""}},
		{User: map[string]string{"k": strings.Repeat("v", 2000)}},
	} {
		b, err := AppendMetadataExtra([]byte("before"), &m)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		field := b[len("before"):]
		if id, n := binary.LittleEndian.Uint16(field), int(binary.LittleEndian.Uint16(field[2:])); id != MetadataExtraID || n != len(field)-4 {
			t.Fatalf("%+v: header id 0x%04x size %d, want 0x%04x and %d", m, id, n, MetadataExtraID, len(field)-4)
		}
		got, err := ParseMetadataExtra(field[4:])
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if !reflect.DeepEqual(*got, m) {
			t.Errorf("read back %+v, wrote %+v", *got, m)
		}
		again, _ := AppendMetadataExtra(nil, &m)
		if !bytes.Equal(again, field) {
			t.Errorf("%+v: encoded twice, the bytes differ", m)
		}
	}
}

// A record of a tag this version does not know is skipped (a later writer
// may add some).
func TestMetadataExtraSkipsUnknownRecords(t *testing.T) {
	data := []byte{MetadataVersion, 9, 2, 0, 'x', 'y', metaTagContentType, 3, 0, 'a', '/', 'b'}
	m, err := ParseMetadataExtra(data)
	if err != nil || m.ContentType != "a/b" {
		t.Fatalf("got %+v, %v; want content type a/b", m, err)
	}
}

// Malformed data is an error that says what is wrong: never a panic, never
// a partial answer.
func TestMetadataExtraMalformed(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "is empty"},
		{"other-version", []byte{2}, "has version 2"},
		{"cut-record-header", []byte{1, metaTagContentType, 5}, "cut short"},
		{"record-past-end", []byte{1, metaTagContentType, 5, 0, 'a'}, "says 5 bytes, only 1 follow"},
		{"user-no-key-length", []byte{1, metaTagUser, 1, 0, 'a'}, "key length does not fit"},
		{"user-key-past-value", []byte{1, metaTagUser, 3, 0, 9, 0, 'a'}, "key length does not fit"},
		{"user-empty-key", []byte{1, metaTagUser, 2, 0, 0, 0}, "is not a header name"},
		{"user-key-newline", []byte{1, metaTagUser, 4, 0, 2, 0, 'a', '\n'}, "is not a header name"},
		{"user-key-twice", []byte{1, metaTagUser, 3, 0, 1, 0, 'k', metaTagUser, 3, 0, 1, 0, 'k'}, `"k" twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseMetadataExtra(c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %+v, %v; want an error containing %q", m, err, c.want)
			}
		})
	}
}

// Every prefix of a good field and every byte flipped either parses or is
// an error: never a panic.
func TestMetadataExtraNeverPanics(t *testing.T) {
	good := keptExtra(t)[4:]
	for n := range len(good) {
		_, _ = ParseMetadataExtra(good[:n])
		bad := bytes.Clone(good)
		bad[n] ^= 0xff
		_, _ = ParseMetadataExtra(bad)
	}
}

func FuzzParseMetadataExtra(f *testing.F) {
	f.Add([]byte{1, metaTagUser, 3, 0, 1, 0, 'k'})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetadataExtra(data)
		if err != nil {
			return
		}
		b, err := AppendMetadataExtra(nil, m)
		if err != nil {
			return // a record over 64 KiB cannot come back: fine
		}
		if again, err := ParseMetadataExtra(b[4:]); err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoded %+v reads back as %+v, %v", m, again, err)
		}
	})
}

// Metadata past what a central header has room for is refused with its
// length, not cut.
func TestMetadataExtraTooLong(t *testing.T) {
	m := &Metadata{CacheControl: strings.Repeat("c", 40000), User: map[string]string{"k": strings.Repeat("v", 30000)}}
	_, err := AppendMetadataExtra(nil, m)
	var tl *MetadataTooLongError
	if !errors.As(err, &tl) || tl.Len <= MaxMetadataExtraLen {
		t.Fatalf("got %v, want a MetadataTooLongError over %d", err, MaxMetadataExtraLen)
	}
	if _, err := AppendMetadataExtra(nil, &Metadata{ContentType: strings.Repeat("t", 70000)}); !errors.As(err, &tl) {
		t.Fatalf("a 70,000-byte value: got %v, want a MetadataTooLongError", err)
	}
}

// Go's archive/zip reads an entry whose central header carries the field
// and a mode: the field is an unknown extra it keeps and skips.
func TestArchiveZipSkipsMetadataExtra(t *testing.T) {
	data := []byte("<p>")
	h := Header{Name: "index.html", ModTime: time.Date(2030, 1, 2, 3, 4, 6, 0, time.UTC), CRC32: 0x2a3d5b7a,
		CompressedSize: 3, UncompressedSize: 3, Mode: 0o750, CentralExtra: string(keptExtra(t))}
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
	if f.Mode().Perm() != 0o750 || !f.Mode().IsRegular() {
		t.Errorf("mode %v, want -rwxr-x---", f.Mode())
	}
	if !bytes.Contains(f.Extra, []byte(h.CentralExtra)) {
		t.Errorf("extra %x does not hold the metadata field", f.Extra)
	}
}
