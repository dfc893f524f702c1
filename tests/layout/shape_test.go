package layout_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The shape of every production function in the tree: a reader takes a
// function in on one screen, and a list of parameters that is really one
// thing is a type.

// The limits, in one place.
const (
	// maxFuncLines is the longest a function may be, from its signature to
	// its closing brace: past it, its steps read better as functions.
	maxFuncLines = 80
	// maxFuncParams is the most parameters a function (or function literal)
	// takes: fixed inputs are fields of the type that holds them.
	maxFuncParams = 5
)

// limit is which of the two a function is over.
type limit string

const (
	overLines  limit = "lines"
	overParams limit = "parameters"
)

// notProduction are the directories, below the root, whose code is tests,
// test servers or benchmarks rather than the product.
var notProduction = []string{"tests/", "internal/testenv/", "bench/"}

// oversize is a function over one of the limits.
type oversize struct {
	at       token.Position // its file (relative to the root) and line
	function string         // its name, Receiver.Method for a method
	over     limit
	size     int
}

func (o oversize) String() string {
	fix := "split it into its steps, a function each, named from the domain"
	if o.over == overParams {
		fix = "gather the parameters that are one thing in a type (an options struct, the type whose fields they are)"
	}
	return fmt.Sprintf("%s:%d: %s has %d %s, at most %d: %s", o.at.Filename, o.at.Line, o.function, o.size, o.over, limitOf(o.over), fix)
}

func TestNoFunctionOverTheShapeLimits(t *testing.T) {
	found := oversizeFunctions(t)
	for _, key := range slices.Sorted(maps.Keys(found)) {
		t.Error(found[key])
	}
}

func limitOf(l limit) int {
	if l == overParams {
		return maxFuncParams
	}
	return maxFuncLines
}

// oversizeFunctions parses every production .go file of the tree and
// returns its functions over a limit, keyed by "file function limit".
func oversizeFunctions(t *testing.T) map[string]oversize {
	t.Helper()
	found := map[string]oversize{}
	files := 0
	walkSource(t, func(rel string, d fs.DirEntry) {
		if d.IsDir() || filepath.Ext(rel) != ".go" || strings.HasSuffix(rel, "_test.go") || isNotProduction(rel) {
			return
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range oversizeIn(fset, f) {
			o.at.Filename = rel
			found[rel+" "+o.function+" "+string(o.over)] = o
		}
	})
	if files < 100 {
		t.Fatalf("found only %d production Go files under %s: not the repository's root, or the walk skips too much", files, root)
	}
	return found
}

func isNotProduction(rel string) bool {
	for _, dir := range notProduction {
		if strings.HasPrefix(rel, dir) {
			return true
		}
	}
	return false
}

// oversizeIn is f's functions over a limit: declarations by both, function
// literals by their parameters (their lines count in the declaration that
// holds them).
func oversizeIn(fset *token.FileSet, f *ast.File) []oversize {
	var out []oversize
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		var ft *ast.FuncType
		switch fn := n.(type) {
		case *ast.FuncDecl:
			name, ft = funcName(fn), fn.Type
			if lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; fn.Body != nil && lines > maxFuncLines {
				out = append(out, oversize{at: fset.Position(fn.Pos()), function: name, over: overLines, size: lines})
			}
		case *ast.FuncLit:
			name, ft = fmt.Sprintf("the function literal at line %d", fset.Position(fn.Pos()).Line), fn.Type
		default:
			return true
		}
		if params := ft.Params.NumFields(); params > maxFuncParams {
			out = append(out, oversize{at: fset.Position(ft.Pos()), function: name, over: overParams, size: params})
		}
		return true
	})
	return out
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr: // a generic type's method
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}
