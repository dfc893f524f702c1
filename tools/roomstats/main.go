// Command roomstats measures how a Go package's files hang together: files
// and lines per package, references between its files that run against
// the file order, and the path a handler's calls take through the files.
//
//	go run ./tools/roomstats [-entry pkg.Type.Method] ./create/... ./extract
//
// A reference is an identifier in one file that names a package-level
// declaration (function, method, type, variable, constant) made in another
// file of the same package; it runs against the file order when the
// declaration's file sorts before the referring one (a reader climbs back
// up). The path from -entry is the depth-first walk of the functions and
// methods it calls inside the module, each visited once: its stops, the
// distinct files and the stops that climb back to an earlier file of the
// same package.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

type pkg struct {
	path  string
	files []*ast.File
	names []string // file paths, sorted as the file list shows them
	lines int
	info  *types.Info
	types *types.Package
}

func main() {
	entry := flag.String("entry", "", "a handler to walk from: importpath-suffix.Type.Method, e.g. create.Worker.Handle")
	owners := flag.String("owners", "", "comma-separated handlers: for each declaration, which of them reach it")
	showPath := flag.Bool("path", false, "with -entry: print each stop of the walk, a climb marked ^")
	groups := flag.String("groups", "", "comma-separated handlers: group the files by the handler that reaches them and count references across groups")
	flag.Parse()
	fset := token.NewFileSet()
	pkgs, err := load(fset, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "roomstats:", err)
		os.Exit(1)
	}
	fmt.Printf("%-40s %6s %7s %6s %8s\n", "package", "files", "lines", "refs", "backward")
	for _, p := range pkgs {
		refs, back := fileRefs(fset, p)
		fmt.Printf("%-40s %6d %7d %6d %8d\n", p.path, len(p.files), p.lines, refs, back)
	}
	if *entry != "" {
		walk(fset, pkgs, *entry, *showPath)
	}
	if *owners != "" {
		reachedBy(fset, pkgs, strings.Split(*owners, ","))
	}
	if *groups != "" {
		groupRefs(fset, pkgs, strings.Split(*groups, ","))
	}
}

// groupRefs puts each file in the group of the one handler that reaches
// its functions (a file several reach, or none, is shared) and counts the
// references from one handler's files to another handler's: code a reader
// of one handler must leave its group for.
func groupRefs(fset *token.FileSet, pkgs []*pkg, handlers []string) {
	g := callGraph(pkgs)
	reach := map[string]map[string]bool{} // file → handlers reaching it
	for _, h := range handlers {
		if start := g.find(h); start != nil {
			g.each(start, func(o types.Object) {
				f := fset.Position(o.Pos()).Filename
				if reach[f] == nil {
					reach[f] = map[string]bool{}
				}
				reach[f][h] = true
			})
		}
	}
	group := func(file string) string {
		if len(reach[file]) == 1 {
			for h := range reach[file] {
				return h
			}
		}
		return "shared"
	}
	members := map[string][]string{}
	for _, p := range pkgs {
		for _, n := range p.names {
			members[group(n)] = append(members[group(n)], filepath.Base(n))
		}
	}
	for _, h := range slices.Sorted(maps.Keys(members)) {
		fmt.Printf("%-28s %2d files: %s\n", h, len(members[h]), strings.Join(members[h], " "))
	}
	cross := 0
	for _, p := range pkgs {
		for id, obj := range p.info.Uses {
			if !declared(p, obj) {
				continue
			}
			from, to := group(fset.Position(id.Pos()).Filename), group(fset.Position(obj.Pos()).Filename)
			if from != to && from != "shared" && to != "shared" {
				cross++
				if os.Getenv("ROOMSTATS_VERBOSE") != "" {
					fmt.Printf("  %s (%s) -> %s (%s)\n", filepath.Base(fset.Position(id.Pos()).Filename), from, obj.Name(), filepath.Base(fset.Position(obj.Pos()).Filename))
				}
			}
		}
	}
	fmt.Printf("references from one handler's files to another handler's: %d\n", cross)
}

// reachedBy prints each function of the packages with the handlers whose
// calls reach it, grouped by file.
func reachedBy(fset *token.FileSet, pkgs []*pkg, handlers []string) {
	g := callGraph(pkgs)
	reach := map[types.Object][]string{}
	for _, h := range handlers {
		start := g.find(h)
		if start == nil {
			fmt.Fprintf(os.Stderr, "roomstats: no function %s\n", h)
			os.Exit(1)
		}
		g.each(start, func(o types.Object) { reach[o] = append(reach[o], h[strings.Index(h, ".")+1:]) })
	}
	byFile := map[string][]string{}
	for o := range g.bodies {
		file, _ := filepath.Rel(mustWd(), fset.Position(o.Pos()).Filename)
		who := strings.Join(reach[o], "+")
		if who == "" {
			who = "-"
		}
		byFile[file] = append(byFile[file], fmt.Sprintf("%s[%s]", o.Name(), who))
	}
	for _, f := range slices.Sorted(maps.Keys(byFile)) {
		sort.Strings(byFile[f])
		fmt.Printf("%s: %s\n", f, strings.Join(byFile[f], " "))
	}
}

type graph struct {
	bodies map[types.Object]*ast.FuncDecl
	owner  map[types.Object]*pkg
	calls  map[types.Object][]types.Object
}

func callGraph(pkgs []*pkg) *graph {
	g := &graph{bodies: map[types.Object]*ast.FuncDecl{}, owner: map[types.Object]*pkg{}, calls: map[types.Object][]types.Object{}}
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					o := p.info.Defs[fd.Name]
					g.bodies[o], g.owner[o] = fd, p
				}
			}
		}
	}
	for o, fd := range g.bodies {
		p := g.owner[o]
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				if c := p.info.Uses[id]; c != nil && g.bodies[c] != nil {
					g.calls[o] = append(g.calls[o], c)
				}
			}
			return true
		})
	}
	return g
}

// each calls fn with start and every function its calls reach, once each.
func (g *graph) each(start types.Object, fn func(types.Object)) {
	seen := map[types.Object]bool{}
	var visit func(types.Object)
	visit = func(o types.Object) {
		if seen[o] {
			return
		}
		seen[o] = true
		fn(o)
		for _, c := range g.calls[o] {
			visit(c)
		}
	}
	visit(start)
}

func (g *graph) find(name string) types.Object {
	for o, fd := range g.bodies {
		if qualified(g.owner[o], fd) == name {
			return o
		}
	}
	return nil
}

// load parses and type-checks the packages `go list` names (production
// files only).
func load(fset *token.FileSet, patterns []string) ([]*pkg, error) {
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}} {{.Dir}} {{join .GoFiles \",\"}}"}, patterns...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	imp := importer.ForCompiler(fset, "source", nil)
	var pkgs []*pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		p := &pkg{path: f[0]}
		for _, name := range strings.Split(f[2], ",") {
			path := filepath.Join(f[1], name)
			af, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			p.files, p.names = append(p.files, af), append(p.names, path)
			p.lines += fset.File(af.Pos()).LineCount()
		}
		p.info = &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		if p.types, err = (&types.Config{Importer: imp}).Check(p.path, fset, p.files, p.info); err != nil {
			return nil, fmt.Errorf("type-check %s: %w", p.path, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// declared says whether obj is a package-level declaration or a method of
// package p.
func declared(p *pkg, obj types.Object) bool {
	if obj == nil || obj.Pkg() != p.types {
		return false
	}
	if fn, ok := obj.(*types.Func); ok && fn.Signature().Recv() != nil {
		return true
	}
	return obj.Parent() == p.types.Scope()
}

// fileRefs counts the references between p's files, and those that run
// against the file order.
func fileRefs(fset *token.FileSet, p *pkg) (refs, back int) {
	index := map[string]int{}
	for i, n := range p.names {
		index[n] = i
	}
	for id, obj := range p.info.Uses {
		if !declared(p, obj) {
			continue
		}
		from, to := index[fset.Position(id.Pos()).Filename], index[fset.Position(obj.Pos()).Filename]
		if from == to {
			continue
		}
		refs++
		if to < from {
			back++
		}
	}
	return refs, back
}

// walk prints the depth-first path of calls from entry through the module.
func walk(fset *token.FileSet, pkgs []*pkg, entry string, showPath bool) {
	g := callGraph(pkgs)
	bodies, owner := g.bodies, g.owner
	start := g.find(entry)
	if start == nil {
		fmt.Fprintf(os.Stderr, "roomstats: no function %s among the packages\n", entry)
		os.Exit(1)
	}
	seen := map[types.Object]bool{}
	files := map[string]bool{}
	stops, climbs := 0, 0
	last := ""
	var visit func(obj types.Object)
	visit = func(obj types.Object) {
		if seen[obj] {
			return
		}
		seen[obj] = true
		fd, p := bodies[obj], owner[obj]
		file := fset.Position(fd.Pos()).Filename
		stops++
		files[file] = true
		climb := last != "" && filepath.Dir(last) == filepath.Dir(file) && filepath.Base(file) < filepath.Base(last)
		if climb {
			climbs++
		}
		if showPath {
			mark := " "
			if climb {
				mark = "^"
			}
			fmt.Printf("%s %s %s\n", mark, filepath.Base(file), fd.Name.Name)
		}
		last = file
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var id *ast.Ident
			switch fn := ast.Unparen(call.Fun).(type) {
			case *ast.Ident:
				id = fn
			case *ast.SelectorExpr:
				id = fn.Sel
			}
			if id != nil {
				if callee := p.info.Uses[id]; callee != nil && bodies[callee] != nil {
					visit(callee)
				}
			}
			return true
		})
	}
	visit(start)
	names := make([]string, 0, len(files))
	for f := range files {
		rel, _ := filepath.Rel(mustWd(), f)
		names = append(names, rel)
	}
	sort.Strings(names)
	fmt.Printf("\n%s: %d stops in %d files, %d of them climbing back to an earlier file\n  %s\n", entry, stops, len(files), climbs, strings.Join(names, "\n  "))
}

func qualified(p *pkg, fd *ast.FuncDecl) string {
	name := lastElem(p.path) + "."
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		t := fd.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if ix, ok := t.(*ast.IndexExpr); ok {
			t = ix.X
		}
		if id, ok := t.(*ast.Ident); ok {
			name += id.Name + "."
		}
	}
	return name + fd.Name.Name
}

func lastElem(path string) string { return path[strings.LastIndex(path, "/")+1:] }

func mustWd() string {
	wd, _ := os.Getwd()
	return wd
}
