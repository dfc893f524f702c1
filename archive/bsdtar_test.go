package archive

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
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

// extractsAsRead asserts that Extract with opts writes under a new
// directory the files and directories the readers read (want), each under
// its name, or under rename[name] when get normalises it.
func extractsAsRead(t *testing.T, a *Archive, opts ExtractOptions, want []zipcheck.Entry, rename map[string]string) {
	t.Helper()
	dir := t.TempDir()
	if _, err := a.Extract(t.Context(), dir, opts); err != nil {
		t.Fatalf("Extract %+v: %v", opts, err)
	}
	for _, e := range want {
		name := e.Name
		if r, ok := rename[name]; ok {
			name = r
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if e.Dir {
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				t.Errorf("Extract %+v: directory %q: %v", opts, name, err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil || sha256.Sum256(got) != e.SHA256 {
			t.Errorf("Extract %+v: %q holds %d bytes (%v), not the %d the readers read", opts, name, len(got), err, e.Size)
		}
	}
}

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
