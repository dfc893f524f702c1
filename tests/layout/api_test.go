package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notImportable are the folders whose Go code no one imports from outside:
// internal/ by Go's own rule, and programs, tests, benchmarks and examples.
var notImportable = []string{"internal/", "cmd/", "functions/", "tests/", "bench/", "tools/", "examples/"}

// TestWhatIsAPI holds the line between API and the workflows' own code: a package outside internal/ that another module could import is
// either API (its row in docs/repository.md starts "API:", and it has a
// runnable Example) or the handlers a Lambda of one's own would run (its
// row starts "handlers:"). A package added outside internal/ without
// saying which fails here: move it under internal/, or say what it is.
func TestWhatIsAPI(t *testing.T) {
	table, err := os.ReadFile(filepath.Join(root, repositoryTable))
	if err != nil {
		t.Fatal(err)
	}
	kind := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)/` \\| (API|handlers):").FindAllStringSubmatch(string(table), -1) {
		kind[m[1]] = m[2]
	}
	api := 0
	for _, dir := range codeDirs(t) {
		if !importable(t, dir) {
			continue
		}
		switch kind[dir] {
		case "API":
			api++
			if !hasExample(t, dir) {
				t.Errorf("%s is API (%s) but has no runnable Example: add an Example… test with an // Output: comment", dir, repositoryTable)
			}
		case "handlers":
		default:
			t.Errorf("%s/ can be imported from outside, but its row in %s starts neither \"API:\" nor \"handlers:\": move it under internal/, or say which it is", dir, repositoryTable)
		}
	}
	if api < 2 {
		t.Fatalf("found %d API packages (plan and zipread are): the check checked nothing", api)
	}
}

// importable reports whether dir holds a Go library package outside the
// folders nothing imports.
func importable(t *testing.T, dir string) bool {
	t.Helper()
	for _, p := range notImportable {
		if strings.HasPrefix(dir+"/", p) {
			return false
		}
	}
	files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		return pf.Name.Name != "main"
	}
	return false
}

// hasExample reports whether dir's tests hold an Example function with an
// output to check (go test runs it and compares).
func hasExample(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range pf.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fd.Name.Name, "Example") || fd.Body == nil {
				continue
			}
			for _, c := range pf.Comments {
				if c.Pos() > fd.Body.Lbrace && c.End() < fd.Body.Rbrace && strings.Contains(c.Text(), "Output:") {
					return true
				}
			}
		}
	}
	return false
}
