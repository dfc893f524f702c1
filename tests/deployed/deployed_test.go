package deployed_test

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/s3test"
	"github.com/s3zip/s3zip/internal/zipcheck"
)

const mib = 1 << 20

// sources stores a small mixed set under the allowed source prefix: with and
// without a stored CRC-32, empty to 7 MiB (copy parts and upload parts).
func sources(d *Deployment) map[string][]byte {
	want := map[string][]byte{}
	rng := rand.NewChaCha8([32]byte{11})
	for _, o := range []struct {
		key  string
		size int
		crc  s3test.Checksum
	}{
		{"in/a.txt", 1000, s3test.ChecksumCRC32},
		{"in/empty", 0, s3test.ChecksumNone},
		{"in/big/b.bin", 6*mib + 123, s3test.ChecksumNone},
		{"in/mid.bin", 3 * mib, s3test.ChecksumCRC32},
		{"in/ünï/名前.bin", 7 * mib, s3test.ChecksumCRC32},
	} {
		body := make([]byte, o.size)
		_, _ = rng.Read(body)
		d.S3.PutObject(d.T, sourceBucket, o.key, body, s3test.WithChecksum(o.crc))
		want[o.key] = body
	}
	return want
}

func request(key, strategy string) map[string]any {
	return map[string]any{
		"source":      map[string]any{"bucket": sourceBucket, "prefix": sourcePrefix},
		"destination": map[string]any{"bucket": destinationBucket, "key": key},
		"options":     map[string]any{"strategy": strategy, "partSize": 5 * mib},
	}
}

func (d *Deployment) checkArchive(key string, want map[string][]byte) {
	d.T.Helper()
	path := filepath.Join(d.T.TempDir(), "a.zip")
	d.S3.DownloadFile(d.T, destinationBucket, key, path)
	var w []zipcheck.Want
	for k, body := range want {
		w = append(w, zipcheck.WantBytes(strings.TrimPrefix(k, sourcePrefix), body))
	}
	zipcheck.Check(d.T, path, w)
}

func (d *Deployment) assertClean() {
	d.T.Helper()
	for _, l := range d.S3.Leftovers(d.T, d.Work, destinationBucket) {
		d.T.Errorf("left behind: %s", l)
	}
}

func (d *Deployment) logsOnFailure() {
	d.T.Helper()
	if d.T.Failed() {
		for name, f := range d.Functions {
			if name == "planner" || name == "worker" || name == "finalizer" || name == "abort" {
				d.T.Logf("%s logs:\n%.4000s", name, d.Lambdas.Logs(f))
			}
		}
	}
}

// The template's functions are what `cdk deploy` creates: the handler and
// runtime the bootstrap binaries need, the architecture `make lambdas` builds.
func TestDeployedFunctionsAsDeclared(t *testing.T) {
	tp := requireTemplate(t)
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) != 4 {
		t.Fatalf("%d functions in the template, want 4", len(fns))
	}
	for _, f := range fns {
		if f.Handler != "bootstrap" || f.Runtime != "provided.al2023" || strings.Join(f.Architectures, ",") != "arm64" {
			t.Errorf("%s: handler %q runtime %q architectures %v, want bootstrap, provided.al2023, [arm64] (make lambdas builds linux/arm64)", f.ID, f.Handler, f.Runtime, f.Architectures)
		}
		if f.Role == "" {
			t.Errorf("%s: its role is not a role of the template", f.ID)
		}
		for _, k := range []string{"WORK_BUCKET", "WORK_PREFIX", "CONTROL_BUCKET", "ALLOWED_SOURCE_BUCKETS", "ALLOWED_DESTINATIONS"} {
			if f.Env[k] == "" {
				t.Errorf("%s: environment has no %s", f.ID, k)
			}
		}
		t.Logf("%s: %d MB, %d s, env %v", f.Name, f.MemoryMB, f.TimeoutSeconds, f.Env)
	}
}

// A duo archive of the mixed set, started with StartExecution's input: the
// packaged functions build it, every S3 call is allowed by its role.
func TestDeployedBuildsArchive(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	out := d.Execute("duo-1", request(destinationPrefix+"duo.zip", "duo"))
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	var summary map[string]any
	if err := json.Unmarshal(out.Output, &summary); err != nil {
		t.Fatalf("output %s: %v", out.Output, err)
	}
	d.checkArchive(destinationPrefix+"duo.zip", want)
	d.assertClean()
	for _, role := range []string{d.Functions["planner"].Role, d.Functions["worker"].Role, d.Functions["finalizer"].Role, d.Machine.Role} {
		if len(d.IAM.Calls(role)) == 0 {
			t.Errorf("role %s made no call: the run did not go through it", role)
		}
	}
	if n := len(d.IAM.Calls(d.Functions["abort"].Role)); n != 0 {
		t.Errorf("abort's role made %d calls in a successful run", n)
	}
	if w := d.Functions["worker"]; w.Invocation == 0 {
		t.Errorf("the worker was never invoked")
	}
	if summary["entries"] == nil && summary["Entries"] == nil {
		t.Logf("finalizer output: %s", out.Output)
	}
}
