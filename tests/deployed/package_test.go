package deployed_test

// The construct library as a CDK user gets it: infra/ built by jsii (the JS,
// the .d.ts and the nine linux/arm64 binaries: npm pack's prepack) and packed
// by `npm pack` (builtPackage, shared with python_test.go), the tarball installed into a fresh CDK app in a temporary directory outside
// the repository, the app's TypeScript type-checked against the package's
// declarations and synthesized, and that cloud assembly run through this
// harness: an archive built and an archive extracted, every call checked
// against the roles the packed constructs wrote, and every metric filter of
// their monitoring matched against what the functions really logged.

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"
)

// freshApp is the user's app: both constructs with the props this harness
// deploys with (harness_test.go's constants), imported by the package's name,
// and their stack outputs.
var freshApp = template.Must(template.New("app.ts").Parse(`import { App, Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import { ArchiveWorkflow, ExtractWorkflow, addArchiveWorkflowOutputs, addExtractWorkflowOutputs } from 's3zip-cdk';

const app = new App();
const stack = new Stack(app, '{{.Stack}}');
const archive = new ArchiveWorkflow(stack, 'ArchiveWorkflow', {
  sourceBuckets: ['{{.SourceBucket}}'],
  sourcePrefix: '{{.SourcePrefix}}',
  destinationBucket: '{{.DestinationBucket}}',
  destinationPrefix: '{{.DestinationPrefix}}',
  partsPerBatch: 2,
  pieceSize: {{.PieceSize}},
  encryptionKey: kms.Key.fromKeyArn(stack, 'WorkKey', '{{.WorkKey}}'),
  sourceKmsKeyArns: ['{{.SourceKey}}'],
  destinationKmsKeyArn: '{{.DestinationKey}}',
  inventoryBuckets: ['{{.InventoryBucket}}/{{.InventoryPrefix}}'],
  maxPresignSeconds: {{.MaxPresignSeconds}},
  monitoring: {},
});
const extract = new ExtractWorkflow(stack, 'ExtractWorkflow', {
  archiveBucket: '{{.SourceBucket}}',
  workBucket: archive.workBucket,
  archiveKmsKeyArns: ['{{.ExtractArchiveKey}}'],
  destinationKmsKeyArn: '{{.ExtractDestinationKey}}',
  monitoring: {},
});
addArchiveWorkflowOutputs(stack, archive);
addExtractWorkflowOutputs(stack, extract);
`))

func TestDeployedPackedConstructs(t *testing.T) {
	repoTemplate := requireTemplate(t) // its functions, built for this machine, stand in for the package's arm64 ones
	b := packageBuild(t)
	step := stopwatch(t)
	tp, err := LoadTemplate(b.tsAssembly)
	if err != nil {
		t.Fatal(err)
	}
	checkShippedBinaries(t, tp, b.shippedFunctions())
	lintTemplate(t, filepath.Join(b.tsAssembly, stackName+".template.json")) // with the monitoring's alarms, filters, dashboards
	checkSameResources(t, tp, repoTemplate)
	runHere(t, tp, repoTemplate)

	d := DeployTemplate(t, tp)
	defer d.logsOnFailure()
	want := sources(d)
	out := d.Execute("packed-duo", request(destinationPrefix+"packed.zip", "duo"))
	if out.Status != "SUCCEEDED" {
		t.Fatalf("archive execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	d.checkArchive(destinationPrefix+"packed.zip", want)
	d.assertClean()

	useExtract(d)
	entries, zipBytes := putZip(d, "incoming/packed.zip")
	outs := d.StartFromEvent("packed-extract", objectCreated(sourceBucket, "incoming/packed.zip", len(zipBytes)))
	if len(outs) != 1 || outs[0].Status != "SUCCEEDED" {
		t.Fatalf("extract executions %+v", outs)
	}
	got := extracted(d, "extracted/packed/")
	for name, body := range entries {
		if !bytes.Equal(got[name], body) {
			t.Errorf("extracted %s: %d bytes, want %d", name, len(got[name]), len(body))
		}
	}
	checkMetricFiltersMatchLogs(t, d)
	step("an archive built and one extracted through the harness")
}

// monitoringTypes are what the monitoring prop adds to the repository app's resources.
var monitoringTypes = map[string]bool{"AWS::CloudWatch::Alarm": true, "AWS::CloudWatch::Dashboard": true, "AWS::Logs::MetricFilter": true}

var filterPattern = regexp.MustCompile(`^\{ \$\.msg = "([^"]+)" \}$`)

// slowDownsMessage is the line of the one filter each function has
// (lambdaenv.SlowDownsMessage, metric S3SlowDowns) that a run may well not
// produce: SlowDowns appear only under S3 throttling, which this harness's
// small archives seldom meet. Its filter is checked to read a function's log
// group and the right field, not to have matched.
const slowDownsMessage = "s3 slowdowns"

// checkMetricFiltersMatchLogs: each metric filter's line was logged by the
// function whose log group it reads, with a number in the field it counts,
// so no metric of the dashboard is one nobody writes; the S3 SlowDown
// filters (one a function) only if the run met SlowDowns.
func checkMetricFiltersMatchLogs(t *testing.T, d *Deployment) {
	t.Helper()
	byLogGroup := map[string]*LambdaFunction{}
	for _, f := range d.Functions {
		cfg, _ := d.Template.Resources[f.ID].Properties["LoggingConfig"].(map[string]any)
		group, _ := cfg["LogGroup"].(map[string]any)
		byLogGroup[fmt.Sprint(group["Ref"])] = f
	}
	filters := d.Template.Of("AWS::Logs::MetricFilter")
	if len(filters) != 17 {
		t.Errorf("%d metric filters, want 17 (4 a workflow, and an S3 SlowDown filter for each of the 5+4 functions)", len(filters))
	}
	for _, id := range filters {
		p := d.Template.Resources[id].Properties
		group, _ := p["LogGroupName"].(map[string]any)
		f, ok := byLogGroup[fmt.Sprint(group["Ref"])]
		if !ok {
			t.Errorf("%s reads %v, no function's log group", id, p["LogGroupName"])
			continue
		}
		m := filterPattern.FindStringSubmatch(fmt.Sprint(p["FilterPattern"]))
		transform := asList(p["MetricTransformations"])[0].(map[string]any)
		field, _ := strings.CutPrefix(fmt.Sprint(transform["MetricValue"]), "$.")
		if m != nil && m[1] == slowDownsMessage && field == "slowDowns" && !strings.Contains(d.Lambdas.Logs(f), `"msg":"`+slowDownsMessage+`"`) {
			continue // no SlowDown this run: nothing to match (a line that was logged is checked below)
		}
		if m == nil || !loggedNumber(d.Lambdas.Logs(f), m[1], field) {
			t.Errorf("%s (%s): %s never logged a line %v with a number in %q", id, transform["MetricName"], f.ID, p["FilterPattern"], field)
		}
	}
}

// loggedNumber says whether logs hold a JSON line whose msg is msg and whose
// field is a number.
func loggedNumber(logs, msg, field string) bool {
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != msg {
			continue
		}
		if _, ok := rec[field].(float64); ok {
			return true
		}
	}
	return false
}

// stopwatch logs how long each step took.
func stopwatch(t *testing.T) func(what string) {
	last := time.Now()
	return func(what string) {
		t.Logf("%s: %.1fs", what, time.Since(last).Seconds())
		last = time.Now()
	}
}

// builtPackage is infra/ built once for the tests that install it (this file's
// and python_test.go's), by infra/scripts/build-python.sh: one jsii build (the
// JS, the .d.ts, the jsii assembly, the nine arm64 binaries: what npm pack's
// prepack runs), packed by `npm pack` into the npm tarball and by jsii-pacmak
// into the Python wheel; and the TypeScript fresh app installed from the
// tarball and synthesized.
type builtPackage struct {
	tarball, wheel    string
	tsApp, tsAssembly string
}

var (
	buildOnce sync.Once
	built     builtPackage
	// builtDir holds the build and the TypeScript app; TestMain removes it.
	builtDir string
)

// packageBuild builds the package and the TypeScript app the first time a test
// asks (timing each step in that test's log) and returns them.
func packageBuild(t *testing.T) builtPackage {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "s3zip-package-")
		if err != nil {
			t.Fatal(err)
		}
		builtDir = dir
		step := stopwatch(t)
		dists := filepath.Join(dir, "dist")
		cmd := exec.Command("bash", filepath.Join(repo, "infra", "scripts", "build-python.sh"), dists)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("infra/scripts/build-python.sh: %v\n%s", err, out)
		}
		step("jsii, nine arm64 binaries, npm pack and jsii-pacmak (npm tarball and Python wheel)")
		b := builtPackage{tarball: onlyFile(t, filepath.Join(dists, "js", "*.jsii.tgz")), wheel: onlyFile(t, filepath.Join(dists, "python", "*.whl"))}
		b.tsApp = installFreshApp(t, dir, b.tarball)
		step("npm install of the tarball into a fresh app")
		b.tsAssembly = synthFreshApp(t, b.tsApp)
		step("tsc and cdk synth of the fresh app")
		built = b
	})
	if built.tsAssembly == "" {
		t.Fatal("building the package or its TypeScript app failed in an earlier test (see its log)")
	}
	return built
}

// shippedFunctions is the folder of the nine binaries in the installed package.
func (b builtPackage) shippedFunctions() string {
	return filepath.Join(b.tsApp, "node_modules", "s3zip-cdk", "dist", "functions")
}

// onlyFile is the one file matching pattern.
func onlyFile(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) != 1 {
		t.Fatalf("%s: %d files, want 1: %v", pattern, len(m), m)
	}
	return m[0]
}

// installFreshApp writes a CDK app that depends on the tarball and installs
// it. The peer dependencies, which a user's app has of its own, are links to
// the copies this repository installed (npm is told not to fetch peers):
// unpacking aws-cdk-lib again would cost most of this test's time.
func installFreshApp(t *testing.T, dir, tarball string) string {
	t.Helper()
	app := filepath.Join(dir, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(app, "package.json"), map[string]any{
		"name": "fresh-cdk-app", "private": true, "dependencies": map[string]string{"s3zip-cdk": "file:" + tarball},
	})
	// As `cdk init` writes it, among its recommended flags: access logs delivered by a bucket policy.
	writeJSON(t, filepath.Join(app, "cdk.json"), map[string]any{
		"app":     "node app.js",
		"context": map[string]any{"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": true},
	})
	cmd := exec.Command("npm", "install", "--prefer-offline", "--legacy-peer-deps", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = app
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install in a fresh app: %v\n%s", err, out)
	}
	for _, peer := range []string{"aws-cdk-lib", "constructs"} {
		installed := filepath.Join(repo, "node_modules", peer)
		if _, err := os.Stat(filepath.Join(installed, "package.json")); err != nil {
			t.Fatalf("%v: run `npm ci` (or `make node`) first", err)
		}
		if err := os.Symlink(installed, filepath.Join(app, "node_modules", peer)); err != nil {
			t.Fatal(err)
		}
	}
	return app
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// freshAppProps fills the fresh app's template (and python_test.go's app.py).
var freshAppProps = map[string]any{
	"Stack": stackName, "SourceBucket": sourceBucket, "SourcePrefix": sourcePrefix,
	"DestinationBucket": destinationBucket, "DestinationPrefix": destinationPrefix, "PieceSize": pieceSize,
	"WorkKey": workKey, "SourceKey": sourceKey, "DestinationKey": destinationKey,
	"ExtractArchiveKey": extractArchiveKey, "ExtractDestinationKey": extractDestinationKey,
	"InventoryBucket": inventoryBucket, "InventoryPrefix": inventoryPrefix, "MaxPresignSeconds": maxPresignSeconds,
}

// synthFreshApp type-checks and compiles the app against the installed
// package's declarations (tsc, strict) and synthesizes it with the CDK CLI;
// it returns the cloud assembly's directory.
func synthFreshApp(t *testing.T, app string) string {
	t.Helper()
	var src bytes.Buffer
	if err := freshApp.Execute(&src, freshAppProps); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "app.ts"), src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(app, "tsconfig.json"), map[string]any{
		"compilerOptions": map[string]any{"target": "ES2022", "module": "commonjs", "strict": true, "types": []string{}, "skipLibCheck": true},
		"files":           []string{"app.ts"},
	})
	run(t, app, filepath.Join(repo, "node_modules", ".bin", "tsc"), "-p", "tsconfig.json")
	out := filepath.Join(app, "cdk.out")
	run(t, app, filepath.Join(repo, "node_modules", ".bin", "cdk"), "synth", "-q", "--no-notices", "-o", out)
	return out
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CDK_DISABLE_VERSION_CHECK=1", "CDK_DISABLE_CLI_TELEMETRY=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s in the fresh app: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// checkShippedBinaries: every function is declared arm64 and its code asset
// is one of the package's own bootstrap binaries, an AArch64 executable, and
// each of the nine is used.
func checkShippedBinaries(t *testing.T, tp *Template, shipped string) {
	t.Helper()
	byDigest := map[string]string{} // sha256 → function directory in the package
	dirs, err := os.ReadDir(shipped)
	if err != nil {
		t.Fatalf("the installed package ships no functions: %v", err)
	}
	for _, e := range dirs {
		path := filepath.Join(shipped, e.Name(), "bootstrap")
		byDigest[digest(t, path)] = e.Name()
		if m := elfMachine(t, path); m != elf.EM_AARCH64 {
			t.Errorf("%s: %v, want an AArch64 executable (the functions are declared arm64)", path, m)
		}
	}
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, f := range fns {
		if strings.Join(f.Architectures, ",") != "arm64" {
			t.Errorf("%s: architectures %v, want arm64", f.ID, f.Architectures)
		}
		name, ok := byDigest[digest(t, f.Bootstrap)]
		if !ok {
			t.Errorf("%s: its code is none of the package's binaries", f.ID)
		}
		used[name] = true
	}
	if len(fns) != 9 || len(used) != 9 || len(byDigest) != 9 {
		t.Errorf("%d functions using %d of the package's %d binaries, want 9 of 9", len(fns), len(used), len(byDigest))
	}
}

func digest(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func elfMachine(t *testing.T, path string) elf.Machine {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: not an ELF executable: %v", path, err)
	}
	defer f.Close()
	return f.Machine
}

// checkSameResources: the fresh app's template has the resources of this
// repository's app (infra/bin/app.ts, which imports the same package), by
// logical ID and type, besides those of its monitoring: the logical IDs tests
// and deployments rely on hold.
func checkSameResources(t *testing.T, fresh, repoTemplate *Template) {
	t.Helper()
	list := func(tp *Template) []string {
		var out []string
		for id, r := range tp.Resources {
			if r.Type != "AWS::CDK::Metadata" && !monitoringTypes[r.Type] {
				out = append(out, id+" "+r.Type)
			}
		}
		sort.Strings(out)
		return out
	}
	got, want := list(fresh), list(repoTemplate)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the fresh app's resources differ from the repository app's:\n got %d: %v\nwant %d: %v", len(got), got, len(want), want)
	}
}

// runHere points each function of tp at the binary the repository's
// template packaged for this machine under the same logical ID: the
// package's arm64 binaries (checked above) cannot run on this host.
func runHere(t *testing.T, tp, repoTemplate *Template) {
	t.Helper()
	host := map[string]string{}
	fns, err := repoTemplate.Functions()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		host[f.ID] = filepath.Dir(f.Bootstrap)
	}
	for _, id := range tp.Of("AWS::Lambda::Function") {
		key := fmt.Sprint(tp.Resources[id].Properties["Code"].(map[string]any)["S3Key"])
		dir, ok := host[id]
		if !ok {
			t.Fatalf("%s: no function of that logical ID in the repository's template", id)
		}
		tp.assets[key] = dir
	}
}
