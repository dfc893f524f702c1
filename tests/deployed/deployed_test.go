package deployed_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
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
			if name == "planner" || name == "reader" || name == "worker" || name == "finalizer" || name == "abort" {
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
	var archive, extracts []Function
	for _, f := range fns {
		if strings.HasPrefix(f.ID, "ExtractWorkflow") {
			extracts = append(extracts, f)
		} else {
			archive = append(archive, f)
		}
	}
	if len(archive) != 5 || len(extracts) != 4 {
		t.Fatalf("%d archive and %d extract functions in the template, want 5 and 4", len(archive), len(extracts))
	}
	for _, f := range extracts {
		for _, k := range []string{"WORK_BUCKET", "WORK_PREFIX", "EXTRACT_ARCHIVE_PREFIX", "EXTRACT_DESTINATION_PREFIX", "ALLOWED_ARCHIVES", "ALLOWED_DESTINATIONS"} {
			if f.Env[k] == "" {
				t.Errorf("%s: environment has no %s", f.ID, k)
			}
		}
		if f.Handler != "bootstrap" || f.Runtime != "provided.al2023" || strings.Join(f.Architectures, ",") != "arm64" || f.Role == "" {
			t.Errorf("%s: handler %q runtime %q architectures %v role %q", f.ID, f.Handler, f.Runtime, f.Architectures, f.Role)
		}
	}
	for _, f := range archive {
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
	if n, _, _ := d.Functions["worker"].Stats(); n == 0 {
		t.Errorf("the worker was never invoked")
	}
	if n, _, _ := d.Functions["reader"].Stats(); n != 0 {
		t.Errorf("the reader was invoked %d times for an uncompressed archive", n)
	}
	if n := len(d.IAM.Calls(d.Functions["reader"].Role)); n != 0 {
		t.Errorf("the reader's role made %d calls for an uncompressed archive", n)
	}

	// chain: rounds built in the work bucket (create, copy, complete, abort,
	// delete there), and a tagged archive (the planner creates it with tags).
	chain := request(destinationPrefix+"chain.zip", "chain")
	chain["options"].(map[string]any)["tags"] = map[string]string{"project": "s3zip"}
	out = d.Execute("chain-1", chain)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("chain execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	d.checkArchive(destinationPrefix+"chain.zip", want)
	d.assertClean()
	if summary["entries"] == nil && summary["Entries"] == nil {
		t.Logf("finalizer output: %s", out.Output)
	}
}

// Step Functions' 256 KiB holds here too (the adapter of tests/asl): an
// execution input over it starts nothing.
func TestDeployedRefusesOversizedInput(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	req := request(destinationPrefix+"big-input.zip", "duo")
	req["padding"] = strings.Repeat("x", 300<<10)
	out := d.Execute("big-input-1", req)
	if out.Status != "FAILED" || out.Error != "States.DataLimitExceeded" {
		t.Fatalf("execution %s %s, want FAILED States.DataLimitExceeded (cause %.500s)", out.Status, out.Error, out.Cause)
	}
	for name, fn := range d.Functions {
		if n, _, _ := fn.Stats(); n != 0 {
			t.Errorf("%s invoked %d times for an input Step Functions refuses", name, n)
		}
	}
}

// A planner failure goes through Catch → Abort → ArchiveFailed: the
// execution fails with the planner's own error type, and the existing object
// at the destination is untouched.
func TestDeployedAbortsOnPlannerError(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	sources(d)
	key := destinationPrefix + "exists.zip"
	d.S3.PutObject(t, destinationBucket, key, []byte("keep me"))
	out := d.Execute("exists-1", request(key, "duo"))
	if out.Status != "FAILED" || out.Error != "DestinationExistsError" {
		t.Fatalf("execution %s %s, want FAILED DestinationExistsError (cause %.500s)", out.Status, out.Error, out.Cause)
	}
	if got := string(d.S3.GetObject(t, destinationBucket, key)); got != "keep me" {
		t.Errorf("the existing object was changed to %q", got)
	}
	if n, _, _ := d.Functions["abort"].Stats(); n == 0 {
		t.Errorf("abort was never invoked")
	}
	d.assertClean()
}

// A failed batch (the worker's source changed under it, SourceChangedError,
// not retried) ends its child with the refusal; the finalizer fails with it
// and its Catch runs Abort, which aborts the upload and deletes the work
// prefix, Map results included.
func TestDeployedAbortsWhenMapFails(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	sources(d)
	// After planning, every copy of a source is refused as S3 refuses a copy
	// whose x-amz-copy-source-if-match no longer holds.
	d.SetPreconditionFailed(func(op string) bool { return op == "UploadPartCopy" })
	out := d.Execute("changed-1", request(destinationPrefix+"changed.zip", "duo"))
	if out.Status != "FAILED" {
		t.Fatalf("execution %s, want FAILED", out.Status)
	}
	if out.Error != "SourceChangedError" {
		t.Errorf("error %s, want the worker's SourceChangedError (cause %.500s)", out.Error, out.Cause)
	}
	if n, _, _ := d.Functions["abort"].Stats(); n == 0 {
		t.Errorf("abort was never invoked")
	}
	d.assertClean()
}

// EventBridge: a request object put under requests/ in the control bucket
// goes through the template's rule (pattern, input transformer, the rule
// role's StartExecution) and builds the archive; events of another bucket or
// prefix start nothing.
func TestDeployedEventBridgeRoute(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	req, _ := json.Marshal(request(destinationPrefix+"event.zip", "auto"))
	d.S3.PutObject(t, d.Control, "requests/r1.json", req)
	for _, ev := range []struct{ bucket, key string }{
		{sourceBucket, "requests/r1.json"},
		{d.Control, "manifests/r1.json"},
		{d.Control, "other/requests/r1.json"},
	} {
		if outs := d.StartFromEvent("ignored", objectCreated(ev.bucket, ev.key, len(req))); len(outs) != 0 {
			t.Errorf("event for s3://%s/%s started %d executions", ev.bucket, ev.key, len(outs))
		}
	}
	outs := d.StartFromEvent("event-1", objectCreated(d.Control, "requests/r1.json", len(req)))
	if len(outs) != 1 {
		t.Fatalf("the request object's event started %d executions, want 1", len(outs))
	}
	if outs[0].Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", outs[0].Status, outs[0].Error, outs[0].Cause)
	}
	d.checkArchive(destinationPrefix+"event.zip", want)
	d.assertClean()
}

// Part of the fault table, as deployed: S3 answers 500, 503 SlowDown or
// resets connections on a share of the workflow's requests; the packaged
// functions' SDK retries and the ASL's retriers give a correct archive.
func TestDeployedUnderS3Faults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []faultproxy.Fault
		rate   float64
		ops    []faultproxy.Op
		limit  int
	}{
		{"500 and SlowDown", []faultproxy.Fault{faultproxy.InternalError, faultproxy.SlowDown}, 0.2, nil, 0},
		{"resets before and after", []faultproxy.Fault{faultproxy.Reset, faultproxy.ResetAfter}, 0.2, nil, 0},
		// The planner's create succeeds but its answer is lost: it lists the
		// destination's uploads and aborts the one it began.
		{"lost create answer", []faultproxy.Fault{faultproxy.ResetAfter}, 1, []faultproxy.Op{faultproxy.CreateMultipartUpload}, 1},
		// S3 ends the upload at its conditional completion (409
		// ConditionalRequestConflict): RestartUpload starts it again and
		// every part is built anew.
		{"409 at the completion", []faultproxy.Fault{faultproxy.ConditionalConflict}, 1, []faultproxy.Op{faultproxy.CompleteMultipartUpload}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Deploy(t)
			defer d.logsOnFailure()
			want := sources(d)
			ops := tc.ops
			if ops == nil {
				ops = faultproxy.WorkflowOps
			}
			d.Faults.SetRules([]faultproxy.Rule{{Ops: ops, Faults: tc.faults, Rate: tc.rate, Limit: tc.limit}})
			out := d.Execute("faults-1", request(destinationPrefix+"faults.zip", "duo"))
			t.Logf("injected: %s", d.Faults.Summary())
			d.Faults.SetRules(nil)
			if out.Status != "SUCCEEDED" {
				t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
			}
			if f, _ := d.Faults.Injected(); f == 0 {
				t.Errorf("no fault was injected: the case proves nothing")
			}
			if restarted := strings.Contains(topLevelStates(out), "RestartUpload"); restarted != (tc.faults[0] == faultproxy.ConditionalConflict) {
				t.Errorf("states %s: RestartUpload entered %v", topLevelStates(out), restarted)
			}
			d.checkArchive(destinationPrefix+"faults.zip", want)
			d.assertClean()
		})
	}
}

// The finalizer reads the archive back (HeadObject, ChecksumMode ENABLED);
// when S3's CRC-32 differs from the one computed, it deletes the archive this
// run completed (no wrong bytes left) and fails with ChecksumMismatchError
// through Abort. The delete needs s3:DeleteObject on the destination.
func TestDeployedDeletesAWrongArchive(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	sources(d)
	key := destinationPrefix + "wrong.zip"
	d.SetTamper(func(op string, resp *http.Response) {
		if op == "HeadObject" && strings.HasSuffix(resp.Request.URL.Path, key) && resp.Header.Get("X-Amz-Checksum-Crc32") != "" {
			resp.Header.Set("X-Amz-Checksum-Crc32", "AAAAAA==")
		}
	})
	out := d.Execute("wrong-1", request(key, "duo"))
	if out.Status != "FAILED" || out.Error != "ChecksumMismatchError" {
		t.Fatalf("execution %s %s, want FAILED ChecksumMismatchError (cause %.500s)", out.Status, out.Error, out.Cause)
	}
	if strings.Contains(out.Cause, "deleting it failed") {
		t.Errorf("the wrong archive could not be deleted: %.500s", out.Cause)
	}
	if _, err := d.Admin.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(destinationBucket), Key: aws.String(key)}); err == nil {
		t.Errorf("the wrong archive is still at s3://%s/%s", destinationBucket, key)
	}
	d.assertClean()
}

// The read pass as deployed: compression deflate with SHA256SUMS. The
// template's reader function (its own role) reads the sources by range and
// writes compressed pieces to the work prefix; the planner (PlanLayout)
// joins the log's pieces and deletes them; every call is checked against
// the roles (a denial fails the test, and the suite's summary lists unused
// grants).
func TestDeployedCompressedArchive(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	var log bytes.Buffer
	rng := rand.New(rand.NewPCG(5, 5))
	for log.Len() < 20*mib {
		fmt.Fprintf(&log, "2026-11-23T12:%02d:%02dZ INFO GET /api/items/%d status=%d bytes=%d\n", rng.IntN(60), rng.IntN(60), rng.IntN(9999), []int{200, 200, 404}[rng.IntN(3)], rng.IntN(1<<16))
	}
	d.S3.PutObject(t, sourceBucket, "in/logs/app.log", log.Bytes())
	want["in/logs/app.log"] = log.Bytes()
	req := request(destinationPrefix+"compressed.zip", "duo")
	opts := req["options"].(map[string]any)
	opts["compression"], opts["digests"], opts["checksumsFile"] = "deflate", []string{"sha256"}, "SHA256SUMS"
	out := d.Execute("compress-1", req)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	if got := topLevelStates(out); got != "PlanArchive,HasWorkerParts,ReadEntries,PlanLayout,HasWorkerParts,BuildParts,FinalizeArchive,ArchiveCreated" {
		t.Errorf("states entered: %s", got)
	}
	if n, _, _ := d.Functions["reader"].Stats(); n == 0 {
		t.Errorf("the reader was never invoked")
	}
	for _, c := range d.IAM.Calls(d.Functions["reader"].Role) {
		what := strings.TrimPrefix(c.What, "KMS for ") // the KMS calls S3 makes for those
		if !strings.HasPrefix(what, "GetObject ") && !strings.HasPrefix(what, "PutObject ") {
			t.Errorf("the reader made a call it has no business making: %s", c.What)
		}
	}
	path := filepath.Join(t.TempDir(), "c.zip")
	d.S3.DownloadFile(t, destinationBucket, destinationPrefix+"compressed.zip", path)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	var sums []byte
	for _, f := range zr.File {
		switch f.Name {
		case "logs/app.log":
			if f.Method != zip.Deflate || f.CompressedSize64*4 > f.UncompressedSize64 {
				t.Errorf("logs/app.log: method %d, %d of %d bytes; want DEFLATE, at least 4x smaller", f.Method, f.CompressedSize64, f.UncompressedSize64)
			}
		case "SHA256SUMS":
			rc, _ := f.Open()
			sums, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	zr.Close()
	var w []zipcheck.Want
	for k, body := range want {
		name := strings.TrimPrefix(k, sourcePrefix)
		w = append(w, zipcheck.WantBytes(name, body))
		if line := fmt.Sprintf("%x  %s\n", sha256.Sum256(body), name); !bytes.Contains(sums, []byte(line)) {
			t.Errorf("SHA256SUMS lacks %q", line)
		}
	}
	zipcheck.Check(t, path, append(w, zipcheck.WantBytes("SHA256SUMS", sums)))
	d.assertClean()
}

// A batch whose invocations Lambda's service keeps failing (500
// ServiceException, past BuildBatch's six tries) fails the Map Run, which
// nothing catches: the execution fails at BuildParts with its upload and
// work kept (no Abort, no finalizer). Redriven as RedriveExecution does, only
// the children that had not succeeded run, the archive is right and nothing
// is left.
func TestDeployedRedrive(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	for i := range 4 { // copy parts enough for several batches
		key := fmt.Sprintf("in/more/%d.bin", i)
		want[key] = s3test.Bytes(uint64(60+i), 5*mib+1+i)
		d.S3.PutObject(t, sourceBucket, key, want[key])
	}
	worker := d.Functions["worker"]
	// Every batch but the first fails, until the fault is lifted.
	var failing atomic.Bool
	failing.Store(true)
	var first sync.Once
	var firstBatch []byte
	d.mu.Lock()
	d.invokeFault = func(fn *LambdaFunction, payload []byte) string {
		if fn != worker || !failing.Load() {
			return ""
		}
		first.Do(func() { firstBatch = payload })
		if !bytes.Equal(payload, firstBatch) {
			return "ServiceException"
		}
		return ""
	}
	d.mu.Unlock()
	req := request(destinationPrefix+"redriven.zip", "duo")
	req["options"].(map[string]any)["maxConcurrency"] = 1
	out := d.Execute("redrive-1", req)
	if out.Status != "FAILED" || out.Error != "States.ExceedToleratedFailureThreshold" {
		t.Fatalf("execution %s %s, want FAILED at BuildParts (cause %.500s)", out.Status, out.Error, out.Cause)
	}
	for _, fn := range []string{"abort", "finalizer"} {
		if n, _, _ := d.Functions[fn].Stats(); n != 0 {
			t.Fatalf("%s invoked %d times after a failure a retry may mend; want none (kept for Redrive)", fn, n)
		}
	}
	ups, err := d.Admin.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String(destinationBucket)})
	if err != nil || len(ups.Uploads) != 1 {
		t.Fatalf("uploads of the archive after the failure: %d (%v), want its one upload kept", len(ups.Uploads), err)
	}
	before, _, _ := worker.Stats()
	failing.Store(false)
	again := d.Redrive("redrive-1", out)
	if again.Status != "SUCCEEDED" {
		t.Fatalf("redriven execution %s %s %.500s", again.Status, again.Error, again.Cause)
	}
	after, _, _ := worker.Stats()
	var record struct {
		MapRuns map[string]struct {
			Children []*struct{ Status string } `json:"children"`
		} `json:"mapRuns"`
	}
	_ = json.Unmarshal(out.Redrive, &record)
	children := record.MapRuns["BuildParts"].Children
	succeeded := 0
	for _, c := range children {
		if c != nil && c.Status == "SUCCEEDED" {
			succeeded++
		}
	}
	if succeeded == 0 || after-before != len(children)-succeeded {
		t.Errorf("the redrive invoked the worker %d times; want the %d of %d children that had not succeeded", after-before, len(children)-succeeded, len(children))
	}
	t.Logf("children %d, succeeded before the failure %d, run by the redrive %d", len(children), succeeded, after-before)
	d.checkArchive(destinationPrefix+"redriven.zip", want)
	d.assertClean()
}
