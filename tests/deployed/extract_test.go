package deployed_test

// The extract workflow as deployed: the synthesized template's extract state
// machine, its four packaged bootstrap binaries as Lambda processes, every S3
// call checked against their roles, started by StartExecution and by the
// template's EventBridge rule for ZIPs created under incoming/.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// useExtract points the deployment's executions at the extract state
// machine (its definition, its role for the Map's ItemReader/ResultWriter
// and for invoking its functions).
func useExtract(d *Deployment) {
	t := d.T
	sm, err := d.Template.StateMachineOf("ExtractWorkflow")
	if err != nil {
		t.Fatal(err)
	}
	d.Machine = sm
	if err := os.WriteFile(d.defFile, sm.Definition, 0o644); err != nil {
		t.Fatal(err)
	}
	d.smS3 = s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(d.url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(d.S3.AccessKey(), d.S3.SecretKey(), "session-"+sm.Role),
	}, func(o *s3.Options) { o.RetryMaxAttempts = 8 })
}

// extractFunction is the extract workflow's function whose logical ID has name.
func extractFunction(d *Deployment, name string) *LambdaFunction {
	for _, f := range d.Functions {
		if strings.HasPrefix(f.ID, "ExtractWorkflow"+name) {
			return f
		}
	}
	d.T.Fatalf("no function ExtractWorkflow%s in the template", name)
	return nil
}

// putZip stores an archive of STORED entries and DEFLATE entries and
// returns its entries. The deployed planner chooses with AWS's profile
// (plan.DefaultModel.StoredReadBelow, about 2.9 MiB): big/one.bin (5 MiB)
// is copied server-side, big/two.bin (2 MiB) and the small ones are read.
func putZip(d *Deployment, key string) (map[string][]byte, []byte) {
	want := map[string][]byte{
		"big/one.bin":      s3test.Bytes(21, 5*mib),
		"big/two.bin":      s3test.Bytes(22, 2*mib+5),
		"docs/readme.txt":  bytes.Repeat([]byte("deflated as deployed\n"), 5000),
		"docs/small.txt":   []byte("small"),
		"ünï/名前.txt":       bytes.Repeat([]byte("名前"), 300),
		"nested/empty.dat": nil,
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"big/one.bin", "big/two.bin", "docs/readme.txt", "docs/small.txt", "ünï/名前.txt", "nested/empty.dat"} {
		method := zip.Deflate
		if strings.HasPrefix(name, "big/") || name == "docs/small.txt" {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC)})
		if err != nil {
			d.T.Fatal(err)
		}
		_, _ = w.Write(want[name])
	}
	_ = zw.Close()
	d.S3.PutObject(d.T, sourceBucket, key, buf.Bytes())
	return want, buf.Bytes()
}

// extracted returns the objects under prefix in the source bucket.
func extracted(d *Deployment, prefix string) map[string][]byte {
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(d.Admin, &s3.ListObjectsV2Input{Bucket: aws.String(sourceBucket), Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			d.T.Fatal(err)
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = d.S3.GetObject(d.T, sourceBucket, aws.ToString(o.Key))
		}
	}
	return out
}

func (d *Deployment) extractClean(prefix string) {
	d.T.Helper()
	for k := range extracted(d, prefix) {
		d.T.Errorf("left behind: s3://%s/%s%s", sourceBucket, prefix, k)
	}
	for _, l := range d.S3.Leftovers(d.T, d.Work, sourceBucket) {
		d.T.Errorf("left behind: %s", l)
	}
}

// A ZIP created under incoming/ goes through the rule (pattern, input
// transformer, the rule role's StartExecution) and is extracted into
// extracted/<name>/ by the deployed functions: every entry byte for byte,
// the report, nothing left in the work bucket, no call denied.
func TestDeployedExtractFromEvent(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	useExtract(d)
	want, zipBytes := putZip(d, "incoming/deliveries/d1.zip")
	for _, key := range []string{"incoming/deliveries/d1.txt", "other/d1.zip", "extracted/x/y.zip"} {
		if outs := d.StartFromEvent("ignored", objectCreated(sourceBucket, key, 10)); len(outs) != 0 {
			t.Errorf("an event for s3://%s/%s started %d executions", sourceBucket, key, len(outs))
		}
	}
	outs := d.StartFromEvent("extract-event-1", objectCreated(sourceBucket, "incoming/deliveries/d1.zip", len(zipBytes)))
	if len(outs) != 1 {
		t.Fatalf("the archive's event started %d executions, want 1", len(outs))
	}
	if outs[0].Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", outs[0].Status, outs[0].Error, outs[0].Cause)
	}
	got := extracted(d, "extracted/deliveries/d1/")
	var rep struct{ Objects []extract.Written }
	if err := json.Unmarshal(got[extract.ReportName], &rep); err != nil || len(rep.Objects) != len(want) {
		t.Errorf("report: %v, %d objects, want %d", err, len(rep.Objects), len(want))
	}
	delete(got, extract.ReportName)
	if len(got) != len(want) {
		t.Errorf("%d objects extracted, want %d", len(got), len(want))
	}
	for name, body := range want {
		if !bytes.Equal(got[name], body) {
			t.Errorf("%s: %d bytes, want %d", name, len(got[name]), len(body))
		}
	}
	for _, l := range d.S3.Leftovers(t, d.Work, sourceBucket) {
		t.Errorf("left behind: %s", l)
	}
	if n, _, _ := extractFunction(d, "ExtractAbort").Stats(); n != 0 {
		t.Errorf("extract-abort ran %d times on a successful execution", n)
	}
}

// StartExecution with an explicit destination: a second run into the same
// prefix is refused by the planner (ExistsError) and leaves the first run's
// objects alone; a run whose archive is replaced mid-run (every copy answered
// 412) fails with SourceChangedError after its read job has written the small
// entries, and Abort deletes what it wrote, counting them (ObjectsDeleted).
func TestDeployedExtractFailuresAreClean(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	useExtract(d)
	want, _ := putZip(d, "incoming/a.zip")
	req := func(prefix string) map[string]any {
		return map[string]any{
			"archive":     map[string]any{"bucket": sourceBucket, "key": "incoming/a.zip"},
			"destination": map[string]any{"bucket": sourceBucket, "prefix": prefix},
		}
	}
	if out := d.Execute("extract-first", req("extracted/explicit/")); out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	out := d.Execute("extract-again", req("extracted/explicit/"))
	if out.Status != "FAILED" || out.Error != "DestinationExistsError" {
		t.Errorf("second run: %s %s, want FAILED ExistsError", out.Status, out.Error)
	}
	if got := extracted(d, "extracted/explicit/"); len(got) != len(want)+1 {
		t.Errorf("the first run's objects: %d left, want %d", len(got), len(want)+1)
	}

	// The small entries are put by a read job; the copy of big/one.bin fails
	// its If-Match. Both jobs run at once in one batch, and a failing job
	// cancels the batch's reads, so left alone the 412 usually comes before
	// the read job has written anything and Abort has nothing to undo. The
	// 412 is held until the read job's objects are there (as when a copy
	// fails late): the run has written objects when it fails.
	const prefix = "extracted/replaced/"
	read := len(want) - 1 // every entry but big/one.bin, copied server-side
	var mu sync.Mutex
	var writtenBefore []string
	d.SetPreconditionFailed(func(op string) bool {
		if op != "UploadPartCopy" {
			return false
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			keys, err := keysUnder(d, prefix)
			if err == nil && len(keys) >= read || time.Now().After(deadline) {
				mu.Lock()
				if writtenBefore == nil {
					writtenBefore = append([]string{}, keys...)
				}
				mu.Unlock()
				return true
			}
		}
	})
	abort := extractFunction(d, "ExtractAbort")
	earlier := len(abort.Results()) // extract-again's
	out = d.Execute("extract-replaced", req(prefix))
	d.SetPreconditionFailed(nil)
	mu.Lock()
	defer mu.Unlock()
	if out.Status != "FAILED" || out.Error != "SourceChangedError" {
		t.Errorf("replaced archive: %s %s %.300s, want FAILED SourceChangedError", out.Status, out.Error, out.Cause)
	}
	if len(writtenBefore) != read {
		t.Errorf("when the copy failed the read job had written %d objects %q, want %d", len(writtenBefore), writtenBefore, read)
	}
	// Abort's own account (AbortOutput): every object the run wrote deleted.
	deleted, aborts := 0, 0
	for _, r := range abort.Results()[earlier:] {
		if r.FunctionError != "" {
			continue // an attempt that failed; the state machine ran it again
		}
		var ao extract.AbortOutput
		if err := json.Unmarshal(r.Payload, &ao); err != nil {
			t.Errorf("extract-abort's result %.300s: %v", r.Payload, err)
		}
		deleted += ao.ObjectsDeleted
		aborts++
	}
	if aborts == 0 {
		t.Error("extract-abort never ran for extract-replaced (or never succeeded)")
	}
	if deleted != len(writtenBefore) || deleted == 0 {
		t.Errorf("extract-abort deleted %d objects, want the %d the failed run wrote (%q)", deleted, len(writtenBefore), writtenBefore)
	}
	d.extractClean(prefix)
}

// keysUnder lists the keys under prefix in the source bucket as the
// server's own client (no role, nothing recorded); it may run off the test
// goroutine, so it returns its error rather than failing the test.
func keysUnder(d *Deployment, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(d.Admin, &s3.ListObjectsV2Input{Bucket: aws.String(sourceBucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}
