package create

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the longest a function of this package is: past it, the
// steps of a longer one read better as functions of their own.
const maxLines = 80

// maxParams is the most parameters a function of this package takes: a
// part's or a job's fixed inputs are fields of the builder that holds them
// (partBuilder, chainBuild), not a list handed down every call.
const maxParams = 5

// productionFiles parses the package's files that are not tests.
func productionFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files
}

// TestNoFunctionTakesMoreThanFiveParameters guards the shape of the
// package's production code.
func TestNoFunctionTakesMoreThanFiveParameters(t *testing.T) {
	fset, files := productionFiles(t)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var ft *ast.FuncType
			what := "a function literal"
			switch d := n.(type) {
			case *ast.FuncDecl:
				ft, what = d.Type, d.Name.Name
			case *ast.FuncLit:
				ft = d.Type
			default:
				return true
			}
			if n := ft.Params.NumFields(); n > maxParams {
				t.Errorf("%s: %s takes %d parameters, at most %d: gather the fixed ones in the type that holds them", fset.Position(ft.Pos()), what, n, maxParams)
			}
			return true
		})
	}
}

// TestNoFunctionIsOverEightyLines guards the other half of the shape: a
// function's body, braces included, fits maxLines.
func TestNoFunctionIsOverEightyLines(t *testing.T) {
	fset, files := productionFiles(t)
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := fset.Position(fn.Body.End()).Line - fset.Position(fn.Body.Pos()).Line + 1; n > maxLines {
				t.Errorf("%s: %s is %d lines, at most %d: split it into its steps", fset.Position(fn.Pos()), fn.Name.Name, n, maxLines)
			}
		}
	}
}
