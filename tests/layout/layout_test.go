// Package layout_test holds the documents to the tree: the repository's
// table (docs/repository.md) names every Go package, Lambda and TypeScript
// folder (a table that says five Lambdas when there are nine fails it),
// every document a Go comment or a Markdown file (README.md first) refers
// to exists, every link of the README and docs/ resolves (links_test.go),
// and the README's code is the files the tests build and run
// (snippets_test.go).
package layout_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, where go.mod and README.md are.
const root = "../.."

// repositoryTable is the page whose table names every folder of code.
const repositoryTable = "docs/repository.md"

// notSource are directories whose code is not the project's: other
// people's packages, build output, test inputs.
var notSource = map[string]bool{"node_modules": true, "testdata": true, "dist": true, "cdk.out": true}

func TestRepositoryTableNamesEveryPackage(t *testing.T) {
	rows := repositoryRows(t)
	named := map[string]bool{}
	for _, p := range rows {
		if named[p] {
			t.Errorf("%s has %s twice", repositoryTable, p)
		}
		named[p] = true
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s names %s, which is not in the tree: remove its row", repositoryTable, p)
		}
	}
	for _, dir := range codeDirs(t) {
		if !named[dir] {
			t.Errorf("%s holds code but %s has no row for it: add a row for %s/", dir, repositoryTable, dir)
		}
	}
}

// repositoryRows returns the paths the repository's table names, without
// their trailing slash.
func repositoryRows(t *testing.T) []string {
	t.Helper()
	table, err := os.ReadFile(filepath.Join(root, repositoryTable))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(table), -1) {
		paths = append(paths, strings.TrimSuffix(m[1], "/"))
	}
	if len(paths) == 0 {
		t.Fatalf("%s has no rows", repositoryTable)
	}
	return paths
}

// codeDirs returns every directory that must have a row: each one holding
// Go or TypeScript files, and each Lambda's folder under functions/.
func codeDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	walkSource(t, func(rel string, d fs.DirEntry) {
		switch {
		case d.IsDir() && filepath.Dir(rel) == "functions":
			seen[rel] = true
		case !d.IsDir() && (filepath.Ext(rel) == ".go" || filepath.Ext(rel) == ".ts") && filepath.Dir(rel) != ".":
			seen[filepath.Dir(rel)] = true
		}
	})
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	if !slices.Contains(dirs, "plan") || !slices.Contains(dirs, "functions/worker") {
		t.Fatalf("walking %s found %v: not the repository's root", root, dirs)
	}
	return dirs
}

// walkSource calls fn with every file and directory of the project's own
// tree (slash-separated, relative to root), skipping hidden directories and
// notSource.
func walkSource(t *testing.T, fn func(rel string, d fs.DirEntry)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || notSource[d.Name()]) {
			return filepath.SkipDir
		}
		fn(filepath.ToSlash(rel), d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docRef is a document a comment or a Markdown file points at: a path ending
// in .md, not part of a URL.
var docRef = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./:-])((?:\.\./|[A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\.md)\b`)

func TestDocReferencesExist(t *testing.T) {
	refs := 0
	check := func(where, fromDir, text string) {
		for _, m := range docRef.FindAllStringSubmatch(text, -1) {
			refs++
			if !exists(m[1], fromDir) {
				t.Errorf("%s refers to %s, which is neither in %s/ nor at the root: point it at the file that is there", where, m[1], fromDir)
			}
		}
	}
	walkSource(t, func(rel string, d fs.DirEntry) {
		switch {
		case d.IsDir():
		case filepath.Ext(rel) == ".md": // README.md and the other documents
			text, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				t.Fatal(err)
			}
			check(rel, filepath.Dir(rel), string(text))
		case filepath.Ext(rel) == ".go":
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, rel), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, cg := range f.Comments {
				check(rel, filepath.Dir(rel), cg.Text())
			}
		}
	})
	if refs < 10 {
		t.Fatalf("found only %d document references: the pattern no longer matches how the tree cites documents", refs)
	}
}

// exists reports whether ref names a file relative to the directory that
// cites it, or to the root (how the comments cite: "README.md" beside the
// code, "docs/contract.md" from anywhere).
func exists(ref, fromDir string) bool {
	for _, base := range []string{fromDir, "."} {
		if _, err := os.Stat(filepath.Join(root, base, ref)); err == nil {
			return true
		}
	}
	return false
}
