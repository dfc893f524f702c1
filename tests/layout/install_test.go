package layout_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
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

// make release, as README's Install describes it: one archive a target with
// the CLI stamped with the package's version and the commit (never
// "(devel)"), README.md and LICENSE inside, and a SHA256SUMS file that
// verifies them. One target here; make release builds four.
func TestMakeRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	for _, tool := range []string{"make", "tar", "sha256sum", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	dir := t.TempDir()
	out := makeOutput(t, "release", "RELEASE_DIR="+dir, "RELEASE_TARGETS="+runtime.GOOS+"/"+runtime.GOARCH)
	pkg, err := os.ReadFile(filepath.Join(root, "infra", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(pkg, &meta); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("s3zip-v%s-%s-%s", meta.Version, runtime.GOOS, runtime.GOARCH)
	if !strings.Contains(out, name+".tar.gz") {
		t.Errorf("make release does not name %s.tar.gz:\n%s", name, out)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dir
	if got, err := check.CombinedOutput(); err != nil || !strings.Contains(string(got), name+".tar.gz: OK") {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, got)
	}
	if got, err := exec.Command("tar", "-xzf", filepath.Join(dir, name+".tar.gz"), "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, got)
	}
	for _, f := range []string{"s3zip", "README.md", "LICENSE"} {
		if _, err := os.Stat(filepath.Join(dir, name, f)); err != nil {
			t.Errorf("%s.tar.gz lacks %s: %v", name, f, err)
		}
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	version, err := exec.Command(filepath.Join(dir, name, "s3zip"), "--version").CombinedOutput()
	want := fmt.Sprintf("s3zip v%s commit %s", meta.Version, strings.TrimSpace(string(head)))
	if err != nil || !strings.HasPrefix(string(version), want) {
		t.Errorf("the released s3zip --version: %v, %q; want it to start %q", err, version, want)
	}
}

// published says whether s3zip-cdk is on the npm registry. Until it is,
// `npm install s3zip-cdk` answers 404: every install line must name the
// tarball `make package` writes. Once it is, set this, and the bare name is
// what the READMEs give.
const published = false

// Every `npm install` of s3zip-cdk in the READMEs (the repository's and the
// package's own, shipped in the tarball) installs what exists: the tarball
// of infra/package.json's version, which `make package` writes into dist/.
func TestInstallLinesNameWhatExists(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "infra", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Name, Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	tarball := "dist/" + pkg.Name + "-" + pkg.Version + ".tgz"
	if !strings.Contains(makeOutput(t, "-n", "package"), "--pack-destination dist") {
		t.Fatalf("make package no longer packs into dist/; %s is not where it writes", tarball)
	}
	for _, doc := range []string{"README.md", "infra/README.md"} {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		// Inline code may wrap: a command is read up to its closing backtick or comment.
		text := strings.ReplaceAll(string(raw), "\n", " ")
		found := 0
		for _, m := range regexp.MustCompile("npm install ([^`#]*)").FindAllStringSubmatchIndex(text, -1) {
			// A sentence about the registry (it answers 404; once published…) may name the
			// bare package; a code block is all commands.
			start, end := 0, len(text)
			for _, stop := range []string{". ", "```"} {
				start = max(start, strings.LastIndex(text[:m[0]], stop)+len(stop))
				if i := strings.Index(text[m[1]:], stop); i >= 0 {
					end = min(end, m[1]+i)
				}
			}
			aboutRegistry := strings.Contains(text[start:end], "404") || strings.Contains(text[start:end], "published")
			for _, arg := range strings.Fields(text[m[2]:m[3]]) {
				if !strings.Contains(arg, pkg.Name) || (aboutRegistry && arg == pkg.Name) {
					continue
				}
				found++
				if ok := strings.HasSuffix(arg, "/"+tarball) || (published && arg == pkg.Name); !ok {
					t.Errorf("%s: npm install %s: want the tarball make package writes, PATH/%s (%s is not on the npm registry)", doc, arg, tarball, pkg.Name)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s says nowhere how to install %s (npm install …/%s)", doc, pkg.Name, tarball)
		}
		if !published && !strings.Contains(text, "make package") {
			t.Errorf("%s does not say that make package writes %s", doc, tarball)
		}
	}
}
