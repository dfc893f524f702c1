package layout_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's install section, run as it says: `make install` puts a
// working s3zip where `go install` would (GOBIN, else GOPATH/bin), PREFIX
// and BINDIR move it.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not on PATH")
	}
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	want := goEnv("GOBIN")
	if want == "" {
		want = filepath.Join(strings.Split(goEnv("GOPATH"), string(filepath.ListSeparator))[0], "bin")
	}
	for args, dir := range map[string]string{"": want, "PREFIX=/usr/local": "/usr/local/bin", "BINDIR=/opt/x": "/opt/x"} {
		out := makeOutput(t, "-n", "install", args)
		if !strings.Contains(out, `-o "`+filepath.Join(dir, "s3zip")+`" ./cmd/s3zip`) {
			t.Errorf("make -n install %s builds elsewhere than %s:\n%s", args, dir, out)
		}
	}
	bin := t.TempDir()
	out := makeOutput(t, "install", "BINDIR="+bin)
	if !strings.Contains(out, "installed "+filepath.Join(bin, "s3zip")) {
		t.Errorf("make install does not say where it installed:\n%s", out)
	}
	version, err := exec.Command(filepath.Join(bin, "s3zip"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(version), "s3zip ") {
		t.Errorf("the installed s3zip version: %v\n%s", err, version)
	}
}

func makeOutput(t *testing.T, args ...string) string {
	t.Helper()
	var nonEmpty []string
	for _, a := range args {
		if a != "" {
			nonEmpty = append(nonEmpty, a)
		}
	}
	cmd := exec.Command("make", append([]string{"-s"}, nonEmpty...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %v: %v\n%s", nonEmpty, err, out)
	}
	return string(out)
}
