package stepfn

import (
	"os/exec"
	"strings"
	"testing"
)

// The house's floors: internal/ serves the workflows and never reaches back
// up into them, and extract stands beside create, not on it.
// go list sees every import, including tests' and through other packages.
// The upper floors must exist: a package renamed away would leave a check
// that checks nothing.
func TestNoImportRunsUpTheHouse(t *testing.T) {
	const mod = "github.com/s3zip/s3zip/"
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", `{{.ImportPath}}|{{join .Deps " "}}`, "../../internal/...", "../../extract/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, upper := range []string{"create", "extract"} {
		if out, err := exec.Command("go", "list", "../../"+upper).CombinedOutput(); err != nil {
			t.Fatalf("the upper floor %s is not a package (renamed? name its successor here): %v\n%s", upper, err, out)
		}
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, "|")
		// -test lists "p [p.test]" variants too: they hold the tests' imports.
		name, _, _ := strings.Cut(pkg, " ")
		var forbidden []string
		switch {
		case strings.HasPrefix(name, mod+"internal/"):
			forbidden = []string{mod + "create", mod + "extract"}
		case name == mod+"extract" || name == mod+"extract_test":
			forbidden = []string{mod + "create"}
		default:
			continue
		}
		checked++
		for _, d := range strings.Fields(deps) {
			for _, f := range forbidden {
				if d == f {
					t.Errorf("%s depends on %s: a lower floor imports a higher one; move what it needs into internal/", pkg, f)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d packages: go list listed nothing of internal/ or extract/, the check checked nothing\n%s", checked, out)
	}
}
