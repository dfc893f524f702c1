package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// plan is the pure core: names and sizes in, a layout out, one goroutine.
// make test runs its tests without the race detector on that ground (the
// detector multiplied their time by six and had nothing to find), so the
// ground must stay true: no go statement and no lock in plan's code.
func TestPlanIsPure(t *testing.T) {
	files, err := filepath.Glob("../../plan/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "sync" || strings.HasPrefix(p, "sync/") || strings.HasPrefix(p, "golang.org/x/sync") {
				t.Errorf("%s imports %s: plan is run without the race detector as code with one goroutine (Makefile, gotest); keep concurrency out of plan, or run it under -race again", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement in plan, which is run without the race detector as code with one goroutine (Makefile, gotest)", fset.Position(g.Pos()))
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d of plan's files: the glob missed the package", checked)
	}
}
