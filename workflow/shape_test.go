package workflow

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxParams is the most parameters a function of this package takes: a
// part's or a job's fixed inputs are fields of the builder that holds them
// (partBuilder, chainBuild), not a list handed down every call.
const maxParams = 5

// TestNoFunctionTakesMoreThanFiveParameters guards the shape of the
// package's production code.
func TestNoFunctionTakesMoreThanFiveParameters(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
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
