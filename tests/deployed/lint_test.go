package deployed_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// justifiedWarnings are the cfn-lint warnings the template may keep, each
// with why it is harmless. Any other warning fails the test.
var justifiedWarnings = map[string]string{
	"W3005": "CDK emits DependsOn on each function's (and the state machine's) role next to the GetAtt of that role, " +
		"so that the role's default policy exists before the function can run; the duplicate role dependency is redundant, " +
		"not wrong, and comes from aws-cdk-lib, not from infra/.",
}

// TestCfnLint lints the synthesized template with the pinned cfn-lint
// (tools/install.sh puts it in .tools/cfn-lint): no errors, and only the
// warnings justified above.
func TestCfnLint(t *testing.T) {
	tp := requireTemplate(t)
	errors := lintTemplate(t, filepath.Join(tp.Dir, stackName+".template.json"))
	summaryMu.Lock()
	summary.linted, summary.lintErrors = true, errors
	summaryMu.Unlock()
}

// lintTemplate runs cfn-lint on a template file and fails t on each error
// and each warning not justified above; it returns the number of errors.
func lintTemplate(t *testing.T, template string) int {
	t.Helper()
	return lintTemplateWith(t, template, justifiedWarnings)
}

// lintTemplateWith is lintTemplate with the warnings justified for that template.
func lintTemplateWith(t *testing.T, template string, justified map[string]string) int {
	t.Helper()
	bin := filepath.Join(repo, ".tools", "cfn-lint", "bin", "cfn-lint")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: run `make tools` (tools/install.sh installs cfn-lint 1.58.0)", bin)
	}
	cmd := exec.Command(bin, "--format", "json", template)
	out, err := cmd.Output()
	// cfn-lint exits non-zero when it finds anything; the JSON says what.
	var findings []struct {
		Level, Message string
		Rule           struct{ Id string }
		Location       struct{ Path []any }
	}
	if jerr := json.Unmarshal(out, &findings); jerr != nil {
		t.Fatalf("cfn-lint: %v (%v)\n%s", err, jerr, out)
	}
	errors := 0
	for _, f := range findings {
		switch {
		case f.Level == "Error":
			errors++
			t.Errorf("cfn-lint error %s: %s", f.Rule.Id, f.Message)
		case justified[f.Rule.Id] != "":
			t.Logf("cfn-lint %s %s (justified: %s)", strings.ToLower(f.Level), f.Rule.Id, f.Message)
		default:
			t.Errorf("cfn-lint %s %s: %s (fix it, or justify it in justifiedWarnings)", f.Level, f.Rule.Id, f.Message)
		}
	}
	return errors
}
