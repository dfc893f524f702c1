package zipcheck

import (
	"archive/zip"
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type file struct {
	name string
	data []byte
}

// writeStored writes files as STORED entries with Go's archive/zip, which
// puts sizes and CRC in the local header (no data descriptor) via CreateRaw.
func writeStored(t *testing.T, files []file) (string, []Want) {
	return writeStoredFlags(t, files, flagUTF8, creatorUnix)
}

// Host system in the high byte of "version made by" (APPNOTE 4.4.2).
// Info-ZIP unzip 6.0 translates names of entries made on MS-DOS (0) from
// CP437 even when flag bit 11 says UTF-8, so a writer must not claim it.
const (
	creatorFAT  = 0 << 8
	creatorUnix = 3 << 8
)

// flagUTF8 is general purpose bit 11: names are UTF-8 (APPNOTE 4.4.4).
// CreateRaw does not set it by itself.
const flagUTF8 = 0x800

func writeStoredFlags(t *testing.T, files []file, flags, creator uint16) (string, []Want) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	var want []Want
	for _, fl := range files {
		hdr := &zip.FileHeader{Name: fl.name, Method: zip.Store, Flags: flags}
		if strings.HasSuffix(fl.name, "/") {
			hdr.SetMode(os.ModeDir | 0o755)
			want = append(want, WantDir(fl.name))
		} else {
			hdr.SetMode(0o644)
			hdr.CRC32 = crc(fl.data)
			hdr.CompressedSize64 = uint64(len(fl.data))
			hdr.UncompressedSize64 = uint64(len(fl.data))
			want = append(want, WantBytes(fl.name, fl.data))
		}
		hdr.CreatorVersion = creator | 20
		w, err := zw.CreateRaw(hdr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(fl.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, want
}

func TestVerifyAccepts(t *testing.T) {
	many := make([]file, 70000) // > 65,535 entries forces ZIP64 EOCD
	for i := range many {
		many[i] = file{name: fmt.Sprintf("e/%06d", i)}
	}
	many[123].data = []byte("not all empty")
	cases := []struct {
		name  string
		files []file
	}{
		{"plain", []file{{"a.txt", []byte("hello")}, {"b/c.bin", bytes.Repeat([]byte{0, 1, 2, 255}, 1000)}}},
		{"zero-byte-entry", []file{{"empty", nil}, {"x", []byte("x")}}},
		{"unicode-names", []file{{"ünï€.txt", []byte("héllo")}, {"日本/語.txt", []byte("こんにちは")}, {"a b c", []byte("spaces")}}},
		{"directory-entry", []file{{"d/", nil}, {"d/x", []byte("in dir")}}},
		{"zip64-entry-count", many},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, want := writeStored(t, tc.files)
			if err := Verify(path, want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	good := []file{{"a.txt", []byte("hello, world")}, {"b.txt", []byte("second entry")}}
	t.Run("flipped-data-byte", func(t *testing.T) {
		path, want := writeStored(t, good)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte("hello, world"))
		b[i+3] ^= 0x20 // "hello" -> "helLo": same size, wrong CRC
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		err = Verify(path, want)
		if err == nil {
			t.Fatal("Verify accepted an archive with a corrupted entry")
		}
		t.Logf("Verify said (as expected):\n%v", err)
		for _, r := range Readers() {
			if !strings.Contains(err.Error(), r+":") {
				t.Errorf("reader %s did not report the corruption:\n%v", r, err)
			}
		}
	})
	t.Run("content-differs-from-want", func(t *testing.T) {
		path, want := writeStored(t, good)
		want[1] = WantBytes("b.txt", []byte("other content"))
		want = append(want, WantBytes("c.txt", nil))
		err := Verify(path, want)
		if err == nil {
			t.Fatal("Verify accepted an archive that differs from want")
		}
		for _, r := range Readers() {
			for _, frag := range []string{`entry "b.txt": size`, `entry "c.txt": missing`} {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("error lacks %q (reader %s):\n%v", frag, r, err)
				}
			}
		}
	})
	t.Run("unicode-name-without-utf8-flag", func(t *testing.T) {
		// Python follows APPNOTE and decodes such names as CP437 (unzip
		// takes them in the local charset when made on Unix).
		path, want := writeStoredFlags(t, []file{{"ünï€.txt", []byte("x")}}, 0, creatorUnix)
		err := Verify(path, want)
		if err == nil {
			t.Fatal("Verify accepted a UTF-8 name without flag bit 11")
		}
		for _, r := range []string{ReaderPython} {
			if !strings.Contains(err.Error(), r+":") {
				t.Errorf("reader %s did not notice:\n%v", r, err)
			}
		}
	})
	t.Run("unicode-name-from-fat-host", func(t *testing.T) {
		path, want := writeStoredFlags(t, []file{{"ünï€.txt", []byte("x")}}, flagUTF8, creatorFAT)
		err := Verify(path, want)
		if err == nil || !strings.Contains(err.Error(), ReaderUnzip+":") {
			t.Fatalf("want %s to garble a UTF-8 name made on MS-DOS, got: %v", ReaderUnzip, err)
		}
	})
	t.Run("check-fails-test", func(t *testing.T) {
		path, want := writeStored(t, good)
		want[0].Size++
		ft := &fakeTB{TB: t}
		func() {
			defer func() { recover() }() // fakeTB.Fatal panics to stop like FailNow
			Check(ft, path, want)
		}()
		if !ft.failed {
			t.Fatal("Check did not fail the test")
		}
	})
}

func TestMissingReaderFails(t *testing.T) {
	path, want := writeStored(t, []file{{"a", []byte("a")}})
	t.Setenv("PATH", t.TempDir())
	err := Verify(path, want)
	if err == nil {
		t.Fatal("Verify passed with no reader binaries on PATH")
	}
	if !strings.Contains(err.Error(), "tools/install.sh") {
		t.Errorf("error does not say how to install: %v", err)
	}
}

func TestCheckReaderUnknown(t *testing.T) {
	if _, err := CheckReader("winzip", "x.zip"); err == nil {
		t.Fatal("want error for unknown reader")
	}
}

type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatal(args ...any) {
	f.failed = true
	panic("fatal")
}

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
