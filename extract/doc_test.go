package extract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package's shape: a reader takes in each function on one screen, and
// extract stands on internal/* and the core, never on the create workflow's
// package above it.

// maxFuncLines is the longest a production function may be, from its
// signature to its closing brace.
const maxFuncLines = 80

// productionFiles parses the package's non-test files.
func productionFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	if len(files) == 0 {
		t.Fatal("no production files found: run the test from the package's folder")
	}
	return fset, files
}

func TestNoFunctionOverOneScreen(t *testing.T) {
	fset, files := productionFiles(t)
	for name, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, over %d: split it into steps that say what they do", name, start.Line, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

func TestImportsNoCreate(t *testing.T) {
	const create = "github.com/s3zip/s3zip/create"
	_, files := productionFiles(t)
	for name, f := range files {
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == create || strings.HasPrefix(path, create+"/") {
				t.Errorf("%s imports %s: extract uses internal/stepfn, s3err, s3part and s3prefix for the plumbing it shares with create", name, path)
			}
		}
	}
}
