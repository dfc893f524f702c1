package deployed_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/outputschema"
)

// The deployed template's output is the contract of docs/output.md: it
// validates against docs/output.schema.json and carries the archive's own
// values; the links the finalizer signs (options.presign, allowed by
// -c maxPresignSeconds) download the archive and the report with a plain
// GET, as the finalizer's role (checked against its policy: no new grant).
func TestDeployedOutputContract(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	key := destinationPrefix + "contract.zip"
	req := request(key, "duo")
	req["id"] = "order-7"
	req["options"].(map[string]any)["presign"] = "1h"
	out := d.Execute("contract-1", req)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	t.Logf("output: %s", out.Output)
	res := outputschema.Decode[create.FinalizeOutput](t, out.Output)
	body := d.S3.GetObject(t, destinationBucket, key)
	if res.Version != 1 || res.RequestID != "order-7" || res.Execution != "contract-1" || res.Strategy != "duo" || res.Entries != len(want) || res.Parts != res.Stats.Parts || res.Seconds <= 0 {
		t.Errorf("version %d requestId %q execution %q strategy %q entries %d parts %d (stats %d) seconds %v; want 1, order-7, contract-1, duo, %d, the plan's, > 0",
			res.Version, res.RequestID, res.Execution, res.Strategy, res.Entries, res.Parts, res.Stats.Parts, res.Seconds, len(want))
	}
	if res.Archive.URI != "s3://"+destinationBucket+"/"+key || res.Archive.Size != int64(len(body)) || res.Archive.CRC32 != fmt.Sprintf("%08x", crc32.ChecksumIEEE(body)) {
		t.Errorf("archive %+v; the object is %d bytes, CRC-32 %08x", res.Archive, len(body), crc32.ChecksumIEEE(body))
	}
	if res.Links == nil || res.Links.Report == nil {
		t.Fatalf("links %+v; the request asked for them", res.Links)
	}
	if left := time.Until(res.Links.Expires); left < 59*time.Minute || left > time.Hour {
		t.Errorf("links expire in %s, want 1h", left)
	}
	finalizer := d.Functions["finalizer"].Role
	for link, want := range map[string][]byte{res.Links.Archive: body, *res.Links.Report: d.S3.GetObject(t, destinationBucket, key+".report.json")} {
		before := len(d.IAM.Calls(finalizer))
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Errorf("GET %s: %s, %d bytes; want the %d bytes in S3", link, resp.Status, len(got), len(want))
		}
		calls := d.IAM.Calls(finalizer)[before:]
		if len(calls) == 0 || !strings.HasPrefix(calls[0].What, "GetObject GET ") || !strings.Contains(calls[0].What, "X-Amz-Signature") {
			t.Errorf("GET %s was not checked as the finalizer's GetObject: %+v", link, calls)
		}
	}
	d.assertClean()
}

// A link longer than the deployment signs is refused before anything is
// written.
func TestDeployedRefusesLongerLinks(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	sources(d)
	req := request(destinationPrefix+"refused.zip", "duo")
	req["options"].(map[string]any)["presign"] = "2d"
	out := d.Execute("presign-refused-1", req)
	if out.Status != "FAILED" || out.Error != "RequestError" || !strings.Contains(out.Cause, "signs links for at most 24h") {
		t.Fatalf("execution %s %s (%.500s); want FAILED RequestError: at most 24h", out.Status, out.Error, out.Cause)
	}
	for _, name := range []string{"worker", "finalizer"} {
		if n, _, _ := d.Functions[name].Stats(); n != 0 {
			t.Errorf("%s invoked %d times for a refused request", name, n)
		}
	}
	d.assertClean()
}

// The README's rule (examples/notify/rule.json) with the deployed state
// machine's ARN matches its SUCCEEDED and FAILED status changes (the
// example consumer's fixtures, shaped as AWS documents them) and nothing
// else: no RUNNING event, no other state machine's.
func TestNotifyRuleMatchesStatusChanges(t *testing.T) {
	sm, err := requireTemplate(t).StateMachine()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(repo, "examples", "notify", "rule.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pattern map[string]any
	if err := json.Unmarshal(bytes.ReplaceAll(doc, []byte("STATE_MACHINE_ARN"), []byte(sm.Arn)), &pattern); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, bytes.TrimSpace(doc)) {
		t.Errorf("README.md does not show examples/notify/rule.json as it is")
	}
	event := func(file, status, machine string) map[string]any {
		doc, err := os.ReadFile(filepath.Join(repo, "examples", "notify", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(doc, &ev); err != nil {
			t.Fatal(err)
		}
		detail := ev["detail"].(map[string]any)
		detail["stateMachineArn"], detail["status"] = machine, status
		return ev
	}
	other := strings.Replace(sm.Arn, ":stateMachine:", ":stateMachine:Other", 1)
	for _, tc := range []struct {
		file, status, machine string
		match                 bool
	}{
		{"succeeded.json", "SUCCEEDED", sm.Arn, true},
		{"failed.json", "FAILED", sm.Arn, true},
		{"failed.json", "TIMED_OUT", sm.Arn, true},
		{"succeeded.json", "RUNNING", sm.Arn, false},
		{"succeeded.json", "SUCCEEDED", other, false},
	} {
		if got := MatchPattern(pattern, event(tc.file, tc.status, tc.machine)); got != tc.match {
			t.Errorf("%s as %s of %s: matched %v, want %v", tc.file, tc.status, tc.machine, got, tc.match)
		}
	}
}
