package zipread

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

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
