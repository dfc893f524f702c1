// Command readstats prints what a newcomer meets reading the code, as
// numbers to hold before and after a change: a package's exported surface,
// the interface types it declares, its comments' punctuation per line, its
// test files that test no file of the same name, and test comments that
// name issues.
//
//	go run ./tools/readstats ./plan ./create ./extract
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// stats are one package directory's figures.
type stats struct {
	dir                            string
	funcs, types, methods, values  int // exported
	interfaces                     int // all interface types declared
	commentLines, parens, colons   int
	tests, orphanTests, issueNames int
	orphans                        []string
}

var issueRef = regexp.MustCompile(`(?i)\bissues? \d+`)

func main() {
	verbose := flag.Bool("v", false, "list the test files that match no code file")
	flag.Parse()
	fmt.Printf("%-22s %5s %5s %7s %6s %6s %8s %8s %6s %8s %6s\n", "package", "funcs", "types", "methods", "values", "ifaces", "(/line", ":/line", "tests", "orphans", "issue#")
	for _, dir := range flag.Args() {
		s, err := measure(filepath.Clean(dir))
		if err != nil {
			fmt.Fprintln(os.Stderr, "readstats:", err)
			os.Exit(1)
		}
		per := func(n int) float64 { return float64(n) / float64(max(s.commentLines, 1)) }
		fmt.Printf("%-22s %5d %5d %7d %6d %6d %8.2f %8.2f %6d %8d %6d\n", s.dir, s.funcs, s.types, s.methods, s.values, s.interfaces, per(s.parens), per(s.colons), s.tests, s.orphanTests, s.issueNames)
		if *verbose {
			for _, o := range s.orphans {
				fmt.Println("   ", o)
			}
		}
	}
}

// measure reads the Go files of dir (not its subdirectories).
func measure(dir string) (*stats, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	s := &stats{dir: dir}
	code := map[string]bool{}
	for _, n := range names {
		if !strings.HasSuffix(n, "_test.go") {
			code[strings.TrimSuffix(filepath.Base(n), ".go")] = true
		}
	}
	fset := token.NewFileSet()
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		test := strings.HasSuffix(n, "_test.go")
		if test {
			s.tests++
			if !code[strings.TrimSuffix(filepath.Base(n), "_test.go")] {
				s.orphanTests++
				s.orphans = append(s.orphans, filepath.Base(n))
			}
			for _, g := range f.Comments {
				s.issueNames += len(issueRef.FindAllString(g.Text(), -1))
			}
			continue
		}
		for _, g := range f.Comments {
			for _, line := range strings.Split(strings.TrimRight(g.Text(), "\n"), "\n") {
				s.commentLines++
				s.parens += strings.Count(line, "(")
				s.colons += strings.Count(line, ": ")
			}
		}
		s.declarations(f)
	}
	sort.Strings(s.orphans)
	return s, nil
}

// declarations counts f's exported declarations and its interface types.
func (s *stats) declarations(f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			switch {
			case !d.Name.IsExported():
			case d.Recv == nil:
				s.funcs++
			case exportedReceiver(d.Recv):
				s.methods++
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					if _, ok := sp.Type.(*ast.InterfaceType); ok {
						s.interfaces++
					}
					if sp.Name.IsExported() {
						s.types++
					}
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						if n.IsExported() {
							s.values++
						}
					}
				}
			}
		}
	}
}

// exportedReceiver says whether a method's receiver type is exported.
func exportedReceiver(recv *ast.FieldList) bool {
	t := recv.List[0].Type
	if st, ok := t.(*ast.StarExpr); ok {
		t = st.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}
