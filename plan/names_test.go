package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/zipformat"
)

func TestCheckName(t *testing.T) {
	cases := map[string]string{
		"a/b.txt": "", "dir/": "", "ü/名前.txt": "",
		"": "empty name", "/etc/passwd": "absolute path", "../x": `".." path segment`, "a/../b": `".." path segment`,
		`a\b`: "backslash", "a\x00b": "NUL", "a//b": "empty path segment", "./a": `"." path segment`,
		"C:/x": "drive letter", "\xff": "UTF-8", strings.Repeat("n", zipformat.MaxNameLen+1): "over the ZIP limit",
	}
	for name, want := range cases {
		got := CheckName(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("CheckName(%.20q) = %q, want %q", name, got, want)
		}
	}
}

func TestResolveDuplicates(t *testing.T) {
	names := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	t.Run("suffix-keeps-every-original-name", func(t *testing.T) {
		// "a (2).jpg" exists as an object: the second "a.jpg" must not take its name.
		es := []Entry{obj("a.jpg", 1), obj("a.jpg", 2), obj("a (2).jpg", 3), obj(".bashrc", 4), obj(".bashrc", 5), obj("d/", 0), obj("d/", 0)}
		if err := ResolveDuplicates(es, DuplicatesSuffix); err != nil {
			t.Fatal(err)
		}
		want := []string{"a.jpg", "a (3).jpg", "a (2).jpg", ".bashrc", ".bashrc (2)", "d/", "d (2)/"}
		if got := names(es); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("names %q, want %q", got, want)
		}
	})
	t.Run("error-lists-every-duplicate", func(t *testing.T) {
		es := []Entry{obj("a", 1), obj("b", 1), obj("a", 1), obj("b", 1), obj("a", 1)}
		err := ResolveDuplicates(es, DuplicatesError)
		var de *DuplicateError
		if !errors.As(err, &de) || len(de.Names["a"]) != 3 || len(de.Names["b"]) != 2 {
			t.Fatalf("err = %v", err)
		}
	})
}

// Two spellings of one name (precomposed NFC, decomposed NFD — macOS writes
// the latter) look identical in every listing: they are duplicates, though
// each entry keeps the bytes it was given.
func TestResolveDuplicatesUnicodeSpellings(t *testing.T) {
	const nfc, nfd = "caf\u00e9.txt", "cafe\u0301.txt"
	t.Run("error-policy-refuses-nfc-and-nfd", func(t *testing.T) {
		es := []Entry{obj(nfc, 1), obj(nfd, 2)}
		err := ResolveDuplicates(es, DuplicatesError)
		var de *DuplicateError
		if !errors.As(err, &de) || len(de.Names) != 1 || len(de.Names[nfc]) != 2 {
			t.Fatalf("err = %v, want one duplicate name listing both keys", err)
		}
		if !strings.Contains(err.Error(), "Unicode") {
			t.Errorf("error %q does not say the names differ only in their Unicode spelling", err)
		}
	})
	t.Run("suffix-policy-renames-keeping-the-spelling", func(t *testing.T) {
		// The NFD "caf\u00e9 (2).txt" already exists in its other spelling:
		// the third entry must skip to (3).
		es := []Entry{obj(nfc, 1), obj("cafe\u0301 (2).txt", 2), obj(nfd, 3)}
		if err := ResolveDuplicates(es, DuplicatesSuffix); err != nil {
			t.Fatal(err)
		}
		want := []string{nfc, "cafe\u0301 (2).txt", "cafe\u0301 (3).txt"}
		for i, e := range es {
			if e.Name != want[i] {
				t.Errorf("entry %d named %+q, want %+q", i, e.Name, want[i])
			}
		}
	})
	t.Run("directories-added-once-for-both-spellings", func(t *testing.T) {
		es := AddDirectories([]Entry{obj("caf\u00e9/a", 1), obj("cafe\u0301/b", 2)})
		dirs := 0
		for _, e := range es {
			if e.Dir {
				dirs++
			}
		}
		if dirs != 1 {
			t.Errorf("%d directory entries for one folder in two spellings, want 1", dirs)
		}
	})
}

// "sub" and "sub/x" cannot both be extracted to a file system: Make
// refuses them (also in two Unicode spellings), naming both keys and the
// way out; a folder entry "sub/" beside "sub/x" is fine.
func TestMakeRefusesAFileThatIsAlsoAFolder(t *testing.T) {
	dir := Entry{Name: "sub/", Dir: true}
	for _, c := range []struct {
		name    string
		entries []Entry
		says    string
	}{
		{"file-and-file-under-it", []Entry{obj("sub", 10), obj("sub/x", 5)}, `file "sub" (key "p/sub") and "sub/x" (key "p/sub/x")`},
		{"file-and-folder-entry", []Entry{obj("a/sub", 10), {Name: "a/sub/", Dir: true}}, `file "a/sub" (key "p/a/sub") and "a/sub/"`},
		{"nfd-file-nfc-folder", []Entry{obj("cafe\u0301", 10), obj("caf\u00e9/menu.txt", 5)}, "\"caf\u00e9/menu.txt\""},
	} {
		_, err := Make(c.entries, Options{Strategy: StrategyDuo})
		var fe *FolderClashError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("%s: %v; want a FolderClashError saying %s and how to rename through a manifest", c.name, err, c.says)
		}
	}
	if _, err := Make([]Entry{dir, obj("sub/x", 5), obj("subway", 3)}, Options{Strategy: StrategyDuo}); err != nil {
		t.Errorf("a folder entry and its files: %v", err)
	}
}
