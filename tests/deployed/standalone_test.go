package deployed_test

// The standalone CloudFormation template (`make cfn-template`, infra/bin/cfn-template.ts) as a
// team without CDK deploys it: written by the generator, linted, its Parameters given values and
// checked against their AllowedPattern as CloudFormation checks them, its Conditions evaluated
// (resources whose condition is false are not created), its local paths read where
// `aws cloudformation package` would upload them from; then run through this harness like the
// CDK app's template: an archive built and an archive extracted, every call checked against the
// roles it declares.

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// standaloneFile is the template the generator writes into its output directory.
const standaloneFile = "s3zip.template.json"

// artifactsBucket is the bucket `aws cloudformation package` uploads the local paths to.
const artifactsBucket = "s3zip-artifacts"

// standaloneWarnings are the cfn-lint warnings the standalone template may keep.
var standaloneWarnings = map[string]string{
	"W3005": justifiedWarnings["W3005"],
	"W3002": "each function's Code and each state machine's DefinitionS3Location is a local path on purpose: " +
		"`aws cloudformation package` uploads it and writes the S3 location into the template it deploys",
}

// writeStandalone runs the generator with the functions built for this machine
// and returns its output directory.
func writeStandalone(t *testing.T, functions string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cloudformation")
	cmd := exec.Command("node", "--import", "tsx", filepath.Join("infra", "bin", "cfn-template.ts"), "--out", out, "--functions", functions)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("infra/bin/cfn-template.ts: %v\n%s", err, b)
	}
	return out
}

func TestStandaloneTemplate(t *testing.T) {
	repoTemplate := requireTemplate(t) // its functions, built for this machine, are copied next to the standalone template
	step := stopwatch(t)
	dir := writeStandalone(t, filepath.Join(filepath.Dir(repoTemplate.Dir), "functions"))
	step("infra/bin/cfn-template.ts")
	lintTemplateWith(t, filepath.Join(dir, standaloneFile), standaloneWarnings)
	step("cfn-lint")

	t.Run("only the required parameters", func(t *testing.T) {
		tp, err := LoadStandalone(dir, map[string]string{"SourceBuckets": sourceBucket, "DestinationBucket": destinationBucket})
		if err != nil {
			t.Fatal(err)
		}
		checkStandaloneDefaults(t, tp, repoTemplate)
	})
	t.Run("monitoring without extract; extract into another bucket", func(t *testing.T) {
		base := map[string]string{"SourceBuckets": sourceBucket, "DestinationBucket": destinationBucket, "Monitoring": "true"}
		tp, err := LoadStandalone(dir, base)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tp.Of("AWS::CloudWatch::Alarm")); n != 4 {
			t.Errorf("%d alarms with Monitoring and no ExtractBucket, want the archive workflow's 4", n)
		}
		for id := range tp.Resources {
			if strings.HasPrefix(id, "ExtractWorkflow") {
				t.Errorf("%s created without ExtractBucket", id)
			}
		}
		base["ExtractBucket"], base["ExtractDestinationBucket"], base["ExtractDestinationPrefix"] = sourceBucket, destinationBucket, "unzipped/"
		if tp, err = LoadStandalone(dir, base); err != nil {
			t.Fatal(err)
		}
		fns, err := tp.Functions()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fns {
			if !strings.HasPrefix(f.ID, "ExtractWorkflow") {
				continue
			}
			want := map[string]string{"EXTRACT_DESTINATION_BUCKET": destinationBucket, "ALLOWED_DESTINATIONS": destinationBucket + "/unzipped/",
				"ALLOWED_ARCHIVES": sourceBucket + "/" + extractArchivePrefix, "EXTRACT_ARCHIVE_PREFIX": extractArchivePrefix}
			for k, v := range want {
				if f.Env[k] != v {
					t.Errorf("%s: %s=%q, want %q", f.ID, k, f.Env[k], v)
				}
			}
		}
		if n := len(tp.Of("AWS::CloudWatch::Alarm")); n != 8 {
			t.Errorf("%d alarms with Monitoring and ExtractBucket, want 8", n)
		}
	})
	t.Run("docs/deploy.md names every parameter", func(t *testing.T) {
		checkParametersDocumented(t, filepath.Join(dir, standaloneFile), filepath.Join(repo, "docs", "deploy.md"))
	})
	t.Run("refused parameters", func(t *testing.T) {
		for _, c := range []struct{ params map[string]string }{
			{map[string]string{"DestinationBucket": destinationBucket}},
			{map[string]string{"SourceBuckets": "s3://" + sourceBucket, "DestinationBucket": destinationBucket}},
			{map[string]string{"SourceBuckets": "a1,b2,c3,d4,e5,f6", "DestinationBucket": destinationBucket}},
			{map[string]string{"SourceBuckets": sourceBucket + ", other", "DestinationBucket": destinationBucket}},
			{map[string]string{"SourceBuckets": sourceBucket, "DestinationBucket": destinationBucket, "DestinationPrefix": "zips"}},
			{map[string]string{"SourceBuckets": sourceBucket, "DestinationBucket": destinationBucket, "KmsKeyArn": "alias/mine"}},
		} {
			if _, err := LoadStandalone(dir, c.params); err == nil {
				t.Errorf("parameters %v accepted, want them refused", c.params)
			} else {
				t.Logf("refused: %v", err)
			}
		}
	})

	packaged := packageStandalone(t, dir)
	step("aws cloudformation package")

	params := map[string]string{
		"SourceBuckets": sourceBucket + "," + inventoryBucket, "SourcePrefix": sourcePrefix,
		"DestinationBucket": destinationBucket, "DestinationPrefix": destinationPrefix,
		"KmsKeyArn": workKey, "Monitoring": "true", "ExtractBucket": sourceBucket,
	}
	tp, err := LoadStandalone(packaged, params)
	if err != nil {
		t.Fatal(err)
	}
	checkSameResources(t, tp, repoTemplate)
	checkSourceSlots(t, tp, []string{sourceBucket, inventoryBucket})
	for id, r := range tp.Resources {
		for prop, bucket := range map[string]string{"Code": "S3Bucket", "DefinitionS3Location": "Bucket"} {
			if v, ok := r.Properties[prop]; ok {
				if loc, _ := v.(map[string]any); loc[bucket] != artifactsBucket {
					t.Errorf("%s %s after aws cloudformation package: %v, want the artifacts bucket's object", id, prop, v)
				}
			}
		}
	}

	d := DeployTemplate(t, tp)
	defer d.logsOnFailure()
	// One key for every place, as the KmsKeyArn parameter grants it.
	for place := range d.kmsKeys {
		d.kmsKeys[place] = workKey
	}
	want := sources(d)
	out := d.Execute("standalone-duo", request(destinationPrefix+"standalone.zip", "duo"))
	if out.Status != "SUCCEEDED" {
		t.Fatalf("archive execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	d.checkArchive(destinationPrefix+"standalone.zip", want)
	d.assertClean()

	useExtract(d)
	entries, zipBytes := putZip(d, extractArchivePrefix+"standalone.zip")
	outs := d.StartFromEvent("standalone-extract", objectCreated(sourceBucket, extractArchivePrefix+"standalone.zip", len(zipBytes)))
	if len(outs) != 1 || outs[0].Status != "SUCCEEDED" {
		t.Fatalf("extract executions %+v", outs)
	}
	got := extracted(d, extractDestPrefix+"standalone/")
	for name, body := range entries {
		if !bytes.Equal(got[name], body) {
			t.Errorf("extracted %s: %d bytes, want %d", name, len(got[name]), len(body))
		}
	}
	// The key reached both workflows' requests (each allowed: a denial fails the test).
	uses := kmsUses(d)
	for _, want := range []string{"ArchiveWorkflowWorkerRole", "ArchiveWorkflowFinalizerRole", "ExtractWorkflowExtractWorkerRole", "ExtractWorkflowExtractPlannerRole"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(uses)), func(u string) bool { return strings.HasPrefix(u, want) && strings.HasSuffix(u, " "+workKey) }) {
			t.Errorf("no KMS call of %s* on the KmsKeyArn key was checked; calls: %v", want, slices.Sorted(maps.Keys(uses)))
		}
	}
	checkMetricFiltersMatchLogs(t, d)
	step("an archive built and one extracted through the harness")
}

// packageStandalone runs `aws cloudformation package` on the template in dir,
// as a user does before `aws cloudformation deploy`, with an artifacts bucket
// on a local S3 server of its own, and downloads what it uploaded. It returns
// a directory holding the packaged template and each artifact under
// assets/<key> (a function's zip unpacked, its files' modes kept).
func packageStandalone(t *testing.T, dir string) string {
	t.Helper()
	cli := filepath.Join(repo, ".tools", "awscli", "bin", "aws")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("%s is missing: run `make tools` (tools/install.sh installs the AWS CLI 1.46.2)", cli)
	}
	srv := s3test.Start(t)
	srv.CreateBucket(t, artifactsBucket)
	out := t.TempDir()
	config := filepath.Join(out, "aws-config")
	if err := os.WriteFile(config, []byte("[default]\ns3 =\n    addressing_style = path\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cli, "cloudformation", "package", "--template-file", filepath.Join(dir, standaloneFile),
		"--s3-bucket", artifactsBucket, "--s3-prefix", "s3zip", "--output-template-file", filepath.Join(out, standaloneFile), "--use-json")
	// Only the local server's credentials and endpoint: none of the machine's AWS settings.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") })
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+srv.AccessKey(), "AWS_SECRET_ACCESS_KEY="+srv.SecretKey(),
		"AWS_DEFAULT_REGION="+region, "AWS_ENDPOINT_URL_S3="+srv.Endpoint(), "AWS_CONFIG_FILE="+config,
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(out, "none"), "AWS_EC2_METADATA_DISABLED=true")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("aws cloudformation package: %v\n%s", err, b)
	}
	for _, key := range srv.Keys(t, artifactsBucket, "") {
		body := srv.GetObject(t, artifactsBucket, key)
		dst := filepath.Join(out, "assets", key)
		if !bytes.HasPrefix(body, []byte("PK\x03\x04")) {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, body, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		unzipTo(t, body, dst)
	}
	return out
}

// unzipTo writes a zip's files under dir with the modes it records.
func unzipTo(t *testing.T, body []byte, dir string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, f.Mode().Perm())
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(w, rc)
		rc.Close()
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkParametersDocumented: the parameter table of docs/deploy.md ("Without
// CDK") has a row for each of the template's parameters, none other, and
// says "(required)" exactly for those without a default.
func checkParametersDocumented(t *testing.T, template, doc string) {
	t.Helper()
	raw, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Parameters map[string]struct{ Default *string }
	}
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(text), "\n## Without CDK")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{} // parameter → its default column
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| ([^|]*) \\|").FindAllStringSubmatch(section, -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	for name, p := range tmpl.Parameters {
		def, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("docs/deploy.md has no row for the template's parameter %s", name)
		case p.Default == nil && def != "(required)":
			t.Errorf("docs/deploy.md: %s has no default in the template, the doc says %q", name, def)
		case p.Default != nil && def == "(required)":
			t.Errorf("docs/deploy.md: %s is said to be required, the template's default is %q", name, *p.Default)
		case p.Default != nil && *p.Default != "" && !strings.Contains(def, "`"+*p.Default+"`"):
			t.Errorf("docs/deploy.md: %s's default is %q in the template, the doc says %q", name, *p.Default, def)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/deploy.md has a row for %s, which the template has no parameter of", name)
	}
}

// checkStandaloneDefaults: with only the required parameters the stack is the
// archive workflow alone: no extract workflow, no monitoring, no KMS grant,
// the buckets it creates SSE-S3, and the one source bucket readable as a whole.
func checkStandaloneDefaults(t *testing.T, tp, repoTemplate *Template) {
	t.Helper()
	for id, r := range tp.Resources {
		if strings.HasPrefix(id, "ExtractWorkflow") || monitoringTypes[r.Type] {
			t.Errorf("%s (%s) created without ExtractBucket or Monitoring", id, r.Type)
		}
	}
	for id, r := range repoTemplate.Resources {
		if _, ok := tp.Resources[id]; !ok && !strings.HasPrefix(id, "ExtractWorkflow") && r.Type != "AWS::CDK::Metadata" {
			t.Errorf("%s (%s) of the app's archive workflow is missing", id, r.Type)
		}
	}
	for _, id := range tp.Of("AWS::S3::Bucket") {
		if key := tp.BucketKMSKey(id); key != "" {
			t.Errorf("bucket %s encrypted with %s without KmsKeyArn", id, key)
		}
	}
	pols, err := tp.RolePolicies()
	if err != nil {
		t.Fatal(err)
	}
	for role, ps := range pols {
		for _, p := range ps {
			for _, s := range p.Statements {
				for _, a := range s.Action {
					if strings.HasPrefix(a, "kms:") {
						t.Errorf("%s %s grants %s without KmsKeyArn", role, s.Sid, a)
					}
				}
			}
		}
	}
	checkSourceSlots(t, tp, []string{sourceBucket})
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		if f.Env["ALLOWED_SOURCE_PREFIX"] != "" || f.Env["DESTINATION_KMS_KEY_ARN"] != "" {
			t.Errorf("%s: ALLOWED_SOURCE_PREFIX %q, DESTINATION_KMS_KEY_ARN %q, want both empty (unset)", f.ID, f.Env["ALLOWED_SOURCE_PREFIX"], f.Env["DESTINATION_KMS_KEY_ARN"])
		}
	}
}

// checkSourceSlots: the reader's source statement names exactly the buckets
// given, each with the prefix, and its environment allows exactly them.
func checkSourceSlots(t *testing.T, tp *Template, buckets []string) {
	t.Helper()
	pols, err := tp.RolePolicies()
	if err != nil {
		t.Fatal(err)
	}
	var prefix string
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		if strings.HasPrefix(f.ID, "ArchiveWorkflowReader") {
			prefix = f.Env["ALLOWED_SOURCE_PREFIX"]
			if got := f.Env["ALLOWED_SOURCE_BUCKETS"]; got != strings.Join(buckets, ",") {
				t.Errorf("%s: ALLOWED_SOURCE_BUCKETS %q, want %q", f.ID, got, strings.Join(buckets, ","))
			}
		}
	}
	var want []string
	for _, b := range buckets {
		want = append(want, fmt.Sprintf("arn:%s:s3:::%s/%s*", partition, b, prefix))
	}
	slices.Sort(want)
	found := false
	for role, ps := range pols {
		if !strings.HasPrefix(role, "ArchiveWorkflowReaderRole") {
			continue
		}
		for _, p := range ps {
			for _, s := range p.Statements {
				if s.Sid == "SourceObjectsRead" {
					found = true
					if got := slices.Sorted(slices.Values(s.Resource)); !slices.Equal(got, want) {
						t.Errorf("%s SourceObjectsRead on %v, want %v", role, got, want)
					}
				}
			}
		}
	}
	if !found {
		t.Error("the reader's role has no SourceObjectsRead statement")
	}
}
