package deployed_test

// The construct library as a Python CDK user gets it: infra/ built once by jsii
// (infra/scripts/build-python.sh), whose one build yields both the npm tarball
// and the Python wheel jsii-pacmak makes of it (the tarball inside); the wheel
// installed with aws-cdk-lib and constructs, at the versions package-lock.json
// pins, into a fresh virtualenv outside the repository (from the wheels
// tools/install.sh keeps in .tools/python-cdk/wheels); a Python app that is
// package_test.go's TypeScript app written in Python, synthesized with the CDK
// CLI; and its template compared with the TypeScript app's, synthesized from
// the tarball of the same build: equal, asset hashes included, and every
// function's code one of the package's arm64 binaries.

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/template"
)

// pythonApp is freshApp (package_test.go) in Python: the same constructs,
// props and construct IDs, the props in jsii's snake_case, and the stack
// outputs added by the workflows' add_outputs methods (jsii carries no
// functions: addArchiveWorkflowOutputs is TypeScript's).
var pythonApp = template.Must(template.New("app.py").Parse(`import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from s3zip_cdk import ArchiveWorkflow, ExtractWorkflow, MonitoringProps

app = cdk.App()
stack = cdk.Stack(app, "{{.Stack}}")
archive = ArchiveWorkflow(
    stack,
    "ArchiveWorkflow",
    source_buckets=["{{.SourceBucket}}"],
    source_prefix="{{.SourcePrefix}}",
    destination_bucket="{{.DestinationBucket}}",
    destination_prefix="{{.DestinationPrefix}}",
    parts_per_batch=2,
    piece_size={{.PieceSize}},
    encryption_key=kms.Key.from_key_arn(stack, "WorkKey", "{{.WorkKey}}"),
    source_kms_key_arns=["{{.SourceKey}}"],
    destination_kms_key_arn="{{.DestinationKey}}",
    inventory_buckets=["{{.InventoryBucket}}/{{.InventoryPrefix}}"],
    max_presign_seconds={{.MaxPresignSeconds}},
    monitoring=MonitoringProps(),
)
extract = ExtractWorkflow(
    stack,
    "ExtractWorkflow",
    archive_bucket="{{.SourceBucket}}",
    work_bucket=archive.work_bucket,
    archive_kms_key_arns=["{{.ExtractArchiveKey}}"],
    destination_kms_key_arn="{{.ExtractDestinationKey}}",
    monitoring=MonitoringProps(),
)
archive.add_outputs(stack)
extract.add_outputs(stack)
app.synth()
`))

func TestPythonConstructs(t *testing.T) {
	wheelhouse := filepath.Join(repo, ".tools", "python-cdk", "wheels")
	if _, err := os.Stat(wheelhouse); err != nil {
		t.Fatalf("%v: run tools/install.sh (it downloads aws-cdk-lib's and constructs' wheels there)", err)
	}
	b := packageBuild(t)
	checkWheelEmbeds(t, b.wheel, b.tarball)
	work := t.TempDir()
	step := stopwatch(t)
	venv := freshVenv(t, work, b.wheel, wheelhouse)
	step("a fresh virtualenv: the wheel, aws-cdk-lib and constructs installed")
	pyAssembly := synthPythonApp(t, filepath.Join(work, "app"), venv)
	step("cdk synth of the Python app")

	ts, py := readJSON(t, filepath.Join(b.tsAssembly, stackName+".template.json")), readJSON(t, filepath.Join(pyAssembly, stackName+".template.json"))
	decodeAnalytics(t, ts, "node.js/")
	decodeAnalytics(t, py, "Python/")
	for _, d := range diffJSON(ts, py, "") {
		t.Errorf("the Python app's template differs from the TypeScript app's: %s", d)
	}
	tp, err := LoadTemplate(pyAssembly)
	if err != nil {
		t.Fatal(err)
	}
	// The wheel embeds the tarball the TypeScript app installed: its binaries are the wheel's.
	checkShippedBinaries(t, tp, b.shippedFunctions())
}

// jsiiRuntime is the language entry CDK's version reporting adds to the
// constructs it lists in the CDKMetadata resource: "node.js/v20.20.2" in a
// TypeScript app, "Python/3.11.7" in a Python one.
var jsiiRuntime = regexp.MustCompile(`([,{]|^)([^,{}!]+)!jsii-runtime\.Runtime`)

// decodeAnalytics replaces the CDKMetadata resource's Analytics value (CDK's
// version reporting: "v2:deflate64:" and the gzipped, base64-encoded list of the
// constructs used, with their versions) by that list decoded, its runtime entry,
// which must start with language, replaced by "<runtime>": the only part of the
// template the app's language may change.
func decodeAnalytics(t *testing.T, template any, language string) {
	t.Helper()
	props, _ := lookup(template, "Resources", "CDKMetadata", "Properties").(map[string]any)
	encoded, _ := props["Analytics"].(string)
	packed, ok := strings.CutPrefix(encoded, "v2:deflate64:")
	if !ok {
		t.Fatalf("CDKMetadata's Analytics %.80q is not v2:deflate64:", encoded)
	}
	gz, err := base64.StdEncoding.DecodeString(packed)
	if err != nil {
		t.Fatalf("CDKMetadata's Analytics: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("CDKMetadata's Analytics: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("CDKMetadata's Analytics: %v", err)
	}
	list := string(raw)
	m := jsiiRuntime.FindStringSubmatch(list)
	if m == nil || !strings.HasPrefix(m[2], language) {
		t.Errorf("CDKMetadata's Analytics %q: its jsii-runtime entry is not %s…", list, language)
	} else {
		list = strings.Replace(list, m[0], m[1]+"<runtime>!jsii-runtime.Runtime", 1)
	}
	props["Analytics"] = list
}

// lookup follows keys through nested JSON objects (nil when one is missing).
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// checkWheelEmbeds: the wheel carries the npm tarball byte for byte (what the
// jsii runtime loads in Python), so both apps run the same JavaScript and binaries.
func checkWheelEmbeds(t *testing.T, wheel, tarball string) {
	t.Helper()
	zr, err := zip.OpenReader(wheel)
	if err != nil {
		t.Fatalf("the wheel: %v", err)
	}
	defer zr.Close()
	want, err := os.ReadFile(tarball)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".jsii.tgz") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the wheel's %s (%d bytes) is not the npm tarball %s (%d bytes)", f.Name, len(got), filepath.Base(tarball), len(want))
		}
		return
	}
	t.Errorf("the wheel %s embeds no .jsii.tgz", filepath.Base(wheel))
}

// lockedVersion is the version package-lock.json installs of an npm package.
func lockedVersion(t *testing.T, name string) string {
	t.Helper()
	var lock struct {
		Packages map[string]struct{ Version string }
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(repo, "package-lock.json")), &lock); err != nil {
		t.Fatal(err)
	}
	v := lock.Packages["node_modules/"+name].Version
	if v == "" {
		t.Fatalf("package-lock.json installs no %s", name)
	}
	return v
}

// freshVenv makes a virtualenv in dir and installs the wheel with aws-cdk-lib
// and constructs at the npm versions (offline, from the wheelhouse); it returns
// the virtualenv's python.
func freshVenv(t *testing.T, dir, wheel, wheelhouse string) string {
	t.Helper()
	venv := filepath.Join(dir, "venv")
	python := filepath.Join(venv, "bin", "python")
	for _, args := range [][]string{
		{"python3", "-m", "venv", venv},
		// --no-compile: byte-compiling all of aws-cdk-lib's modules took three quarters of the install; the app
		// compiles the few it imports.
		{python, "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", "--no-index", "--find-links", wheelhouse, wheel,
			"aws-cdk-lib==" + lockedVersion(t, "aws-cdk-lib"), "constructs==" + lockedVersion(t, "constructs"), "cdk-nag==" + lockedVersion(t, "cdk-nag")},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return python
}

// synthPythonApp writes app.py and the cdk.json of package_test.go's fresh app
// (the same context) in dir and synthesizes it with the CDK CLI; it returns the
// cloud assembly's directory.
func synthPythonApp(t *testing.T, dir, python string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var src bytes.Buffer
	if err := pythonApp.Execute(&src, freshAppProps); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "app.py"), src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, "cdk.json"), map[string]any{
		"app":     python + " app.py",
		"context": map[string]any{"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": true},
	})
	out := filepath.Join(dir, "cdk.out")
	run(t, dir, filepath.Join(repo, "node_modules", ".bin", "cdk"), "synth", "-q", "--no-notices", "-o", out)
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(readFile(t, path), &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// diffJSON lists where two JSON documents differ, by path, at most 20 places.
func diffJSON(a, b any, path string) []string {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []string
		for _, k := range sorted {
			out = append(out, diffJSON(am[k], bm[k], path+"/"+k)...)
			if len(out) >= 20 {
				return out[:20]
			}
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diffJSON(al[i], bl[i], fmt.Sprintf("%s/%d", path, i))...)
		}
		return out
	}
	return []string{fmt.Sprintf("%s: TypeScript %.300s, Python %.300s", path, compact(a), compact(b))}
}

func compact(v any) string {
	if v == nil {
		return "(absent)"
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}
