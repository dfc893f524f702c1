package layout_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// indexedPackages are the packages whose doc.go indexes their files.
var indexedPackages = []string{"create", "extract"}

// TestPackageDocsIndexTheirFiles holds a package's doc.go to its files:
// every code file is named (name.go, or name where a group's files are
// listed), and every name.go it gives is a file in the package's folder.
func TestPackageDocsIndexTheirFiles(t *testing.T) {
	fileName := regexp.MustCompile(`\b([a-z0-9_]+)\.go\b`)
	for _, pkg := range indexedPackages {
		doc, err := os.ReadFile(filepath.Join(root, pkg, "doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		names, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, n := range names {
			if base := filepath.Base(n); !strings.HasSuffix(base, "_test.go") && base != "doc.go" {
				files = append(files, strings.TrimSuffix(base, ".go"))
			}
		}
		words := regexp.MustCompile(`[a-z0-9_]+`).FindAllString(string(doc), -1)
		for _, f := range files {
			if !slices.Contains(words, f) {
				t.Errorf("%s/doc.go does not name %s.go: add it to the file index", pkg, f)
			}
		}
		for _, m := range fileName.FindAllStringSubmatch(string(doc), -1) {
			if _, err := os.Stat(filepath.Join(root, pkg, m[0])); err != nil {
				t.Errorf("%s/doc.go names %s.go, which the package does not have: correct the index", pkg, m[1])
			}
		}
	}
}
