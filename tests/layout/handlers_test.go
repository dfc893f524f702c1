package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// Every Lambda's main hands the runtime its handler's Handle method: one
// verb for the nine entry points, so a reader going from
// functions/x/main.go to its code looks for one name.
func TestEveryLambdaStartsHandle(t *testing.T) {
	mains, err := filepath.Glob("../../functions/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no functions/*/main.go (%v)", err)
	}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var started []string
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if fn, ok := call.Fun.(*ast.SelectorExpr); !ok || fn.Sel.Name != "Start" || len(call.Args) == 0 {
				return true
			}
			if h, ok := call.Args[0].(*ast.SelectorExpr); ok {
				started = append(started, h.Sel.Name)
			} else {
				started = append(started, "?")
			}
			return true
		})
		if len(started) != 1 || started[0] != "Handle" {
			t.Errorf("%s starts %v: every Lambda starts its handler's Handle method, once", path, started)
		}
	}
}
