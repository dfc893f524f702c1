package zipread

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
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
