package layout_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Node.js version README asks for runs every package package-lock.json
// installs, by each one's own engines field; a package that declares more
// is named in README with what it declares and why it runs anyway (npm ci
// warns EBADENGINE for it). The root package.json's engines say the same
// version README does.
func TestNodeVersionMeetsTheLockfile(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`Node\.js (\d+(?:\.\d+)?) or newer`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md states no Node.js version (`Node.js N or newer`)")
	}
	stated := parseVersion(t, string(m[1]))

	var pkg struct{ Engines struct{ Node string } }
	readJSONFile(t, "package.json", &pkg)
	if want := ">=" + stated.String(); pkg.Engines.Node != want {
		t.Errorf("package.json engines.node %q, want %q: what README.md states (Node.js %s or newer)", pkg.Engines.Node, want, m[1])
	}

	var lock struct {
		Packages map[string]struct {
			Version string
			Engines json.RawMessage
		}
	}
	readJSONFile(t, "package-lock.json", &lock)
	checked := 0
	for where, p := range lock.Packages {
		var engines struct{ Node string }
		if json.Unmarshal(p.Engines, &engines) != nil || engines.Node == "" { // absent, or the old array form
			continue
		}
		checked++
		if satisfies(t, stated, engines.Node) {
			continue
		}
		name := where // the root's or a workspace's own entry has no node_modules/
		if i := strings.LastIndex(where, "node_modules/"); i >= 0 {
			name = where[i+len("node_modules/"):]
		}
		if !strings.Contains(string(readme), name) || !strings.Contains(string(readme), "EBADENGINE") || !strings.Contains(string(readme), engineMinimum(engines.Node)) {
			t.Errorf("%s %s needs Node.js %q, more than README.md's %s or newer: raise README's version (and package.json's engines), "+
				"or name %s in README with what it declares (%s) and why it runs on %s (npm ci warns EBADENGINE)", name, p.Version, engines.Node, m[1], name, engineMinimum(engines.Node), m[1])
		}
	}
	if checked < 10 {
		t.Fatalf("read %d engines fields from package-lock.json: not the lockfile this test knows", checked)
	}
}

func readJSONFile(t *testing.T, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// version is a Node.js version, major.minor.patch.
type version [3]int

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

func (v version) less(w version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// parseVersion reads 20, 20.16 or 20.16.0 (missing parts are 0).
func parseVersion(t *testing.T, s string) version {
	t.Helper()
	var v version
	parts := strings.Split(s, ".")
	if len(parts) > 3 {
		t.Fatalf("version %q: want MAJOR[.MINOR[.PATCH]]", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("version %q: want MAJOR[.MINOR[.PATCH]]", s)
		}
		v[i] = n
	}
	return v
}

// satisfies reports whether v is in the npm semver range r, for the forms
// engines fields use: alternatives joined by ||, each comparators (>=, >,
// <=, <, =, ^, ~ or a bare version, where a bare 20 is 20.x, and 20.* the
// same) or *. Anything else fails the test rather than being guessed at.
func satisfies(t *testing.T, v version, r string) bool {
	t.Helper()
	for _, alt := range strings.Split(r, "||") {
		alt = regexp.MustCompile(`(>=|<=|>|<|=|\^|~)\s+`).ReplaceAllString(strings.TrimSpace(alt), "$1")
		ok := true
		for _, c := range strings.Fields(alt) {
			ok = ok && comparatorHolds(t, v, c, r)
		}
		if ok {
			return true
		}
	}
	return false
}

func comparatorHolds(t *testing.T, v version, c, r string) bool {
	t.Helper()
	if c == "*" || c == "x" {
		return true
	}
	// An x-range: 10.* is 10 (10.x), >= 10.* is >=10.
	c = regexp.MustCompile(`(\.[*xX])+$`).ReplaceAllString(c, "")
	op := strings.TrimRight(c[:strings.IndexFunc(c, func(r rune) bool { return r >= '0' && r <= '9' })+1], "0123456789")
	if !regexp.MustCompile(`^(>=|<=|>|<|=|\^|~)?\d+(\.\d+){0,2}$`).MatchString(c) {
		t.Fatalf("engines %q: comparator %q is not a form this test reads", r, c)
	}
	text := strings.TrimPrefix(c, op)
	w, parts := parseVersion(t, text), len(strings.Split(text, "."))
	switch op {
	case ">=":
		return !v.less(w)
	case ">":
		return w.less(v)
	case "<=":
		return !w.less(v)
	case "<":
		return v.less(w)
	case "^":
		return !v.less(w) && v[0] == w[0]
	case "~":
		return !v.less(w) && v[0] == w[0] && (parts == 1 || v[1] == w[1])
	}
	// A bare or = version: 20 is 20.x, 20.16 is 20.16.x.
	for i := range parts {
		if v[i] != w[i] {
			return false
		}
	}
	return true
}

// engineMinimum is the first version an engines range names, as README
// would give it: "22" for ">=22.0.0", "20.16" for ">= 20.16.0".
func engineMinimum(r string) string {
	v := regexp.MustCompile(`\d+(\.\d+)*`).FindString(r)
	for strings.HasSuffix(v, ".0") {
		v = strings.TrimSuffix(v, ".0")
	}
	return v
}
