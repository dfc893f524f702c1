package plan

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	cases := map[string]string{
		"a/b.txt": "", "dir/": "", "ü/名前.txt": "",
		"": "empty name", "/etc/passwd": "absolute path", "../x": `".." path segment`, "a/../b": `".." path segment`,
		`a\b`: "backslash", "a\x00b": "NUL", "a//b": "empty path segment", "./a": `"." path segment`,
		"C:/x": "drive letter", "\xff": "UTF-8", strings.Repeat("n", MaxNameLen+1): "over the ZIP limit",
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
