package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// conditionFamilies are the conditions both workflows name: each is
// defined once, in internal/failure, under the name the state machines'
// ErrorEquals gives it. An error type elsewhere
// whose name speaks of one of them is a second name for it.
var conditionFamilies = map[string]*regexp.Regexp{
	"a checksum that does not match":   regexp.MustCompile(`Checksum|Mismatch|MD5|Digest`),
	"a destination that exists":        regexp.MustCompile(`Exist`),
	"a source that changed":            regexp.MustCompile(`Changed`),
	"a request with problems":          regexp.MustCompile(`^(Bad)?Request`),
	"a hard limit of S3 or the format": regexp.MustCompile(`^Limit`),
}

// failureDir is where those conditions are defined.
const failureDir = "internal/failure"

// Every production error type's name is defined in one package only, and
// the conditions both workflows meet only in internal/failure: one name per
// error condition across plan, the workflows and inventory.
func TestOneNamePerErrorCondition(t *testing.T) {
	defined := map[string][]string{} // type name → the directories defining it
	walkSource(t, func(rel string, d fs.DirEntry) {
		if d.IsDir() || filepath.Ext(rel) != ".go" || strings.HasSuffix(rel, "_test.go") || isNotProduction(rel) {
			return
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range errorTypes(f) {
			defined[name] = append(defined[name], filepath.Dir(rel))
		}
	})
	for _, want := range []string{"RequestError", "ChecksumMismatchError", "SourceChangedError", "DestinationExistsError", "LimitError"} {
		if dirs := defined[want]; len(dirs) != 1 || dirs[0] != failureDir {
			t.Errorf("%s is defined in %v, want %s alone", want, dirs, failureDir)
		}
	}
	for name, dirs := range defined {
		if len(dirs) > 1 {
			t.Errorf("error type %s is defined in %d places (%s): one condition, one type", name, len(dirs), strings.Join(dirs, ", "))
		}
		for cond, re := range conditionFamilies {
			if re.MatchString(name) && dirs[0] != failureDir {
				t.Errorf("%s (in %s) names %s, which internal/failure defines: use its type", name, dirs[0], cond)
			}
		}
	}
}

// errorTypes are the names of f's type declarations that end in Error
// (aliases included: an alias is a second name too).
func errorTypes(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			if ts := s.(*ast.TypeSpec); strings.HasSuffix(ts.Name.Name, "Error") {
				names = append(names, ts.Name.Name)
			}
		}
	}
	return names
}
