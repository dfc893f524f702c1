package deployed_test

// SSE-KMS as deployed: the stack is synthesized with a key for every place
// (harness_test.go), and every request on an object there is checked for
// the KMS calls S3 makes with the caller's rights. This test makes sure
// those checks happen on the paths that need each key, and that each role
// holds exactly the keys of what it reads and writes.

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/iameval"
)

// kmsUses lists the allowed KMS calls so far as "role action key" lines.
func kmsUses(d *Deployment) map[string]bool {
	out := map[string]bool{}
	for _, c := range d.IAM.Calls("") {
		for i, r := range c.Requests {
			if strings.HasPrefix(r.Action, "kms:") && i < len(c.Decisions) && c.Decisions[i].Allowed {
				out[c.Role+" "+r.Action+" "+r.Resource] = true
			}
		}
	}
	return out
}

// A duo archive of encrypted sources into an encrypted destination, then an
// extract of an encrypted archive into an encrypted prefix: every role that
// reads or writes them is checked against its key (none denied, Deploy's
// cleanup), and the calls that need each key were made.
func TestDeployedKMSKeys(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)

	// A request naming a key the deployment was not granted is refused by
	// the planner before it writes anything (it would fail at the first
	// write on AWS), naming the key and the setting that grants it.
	other := "arn:aws:kms:" + region + ":" + account + ":key/00000000-0000-4000-8000-0000000000ff"
	refused := request(destinationPrefix+"other-key.zip", "duo")
	refused["options"].(map[string]any)["sse"] = map[string]any{"type": "aws:kms", "kmsKeyId": other}
	out := d.Execute("kms-other-key", refused)
	if out.Status != "FAILED" || out.Error != "RequestError" || !strings.Contains(out.Cause, other) || !strings.Contains(out.Cause, "destinationKmsKeyArn") {
		t.Errorf("a request naming %s: %s %s %.500s, want FAILED RequestError naming the key and destinationKmsKeyArn", other, out.Status, out.Error, out.Cause)
	}
	for _, c := range d.IAM.Calls(d.Functions["planner"].Role) {
		if strings.HasPrefix(c.What, "CreateMultipartUpload ") || strings.HasPrefix(c.What, "PutObject ") {
			t.Errorf("the planner wrote before refusing the key: %s", c.What)
		}
	}
	if out := d.Execute("kms-duo", request(destinationPrefix+"kms.zip", "duo")); out.Status != "SUCCEEDED" {
		t.Fatalf("create: execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	d.checkArchive(destinationPrefix+"kms.zip", want)
	archiveMachine := d.Machine.Role

	useExtract(d)
	putZip(d, extractArchivePrefix+"kms.zip")
	out = d.Execute("kms-extract", map[string]any{"archive": map[string]any{"bucket": sourceBucket, "key": extractArchivePrefix + "kms.zip"}})
	if out.Status != "SUCCEEDED" {
		t.Fatalf("extract: execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}

	role := func(name string) string { return d.Functions[name].Role }
	extractRole := func(name string) string { return extractFunction(d, name).Role }
	used := kmsUses(d)
	for _, w := range []struct{ role, action, key, why string }{
		{role("planner"), "kms:GenerateDataKey", destinationKey, "CreateMultipartUpload of the archive"},
		{role("worker"), "kms:Decrypt", sourceKey, "UploadPartCopy from a source"},
		{role("worker"), "kms:Decrypt", destinationKey, "parts of the archive's upload"},
		{role("finalizer"), "kms:Decrypt", destinationKey, "CompleteMultipartUpload"},
		{role("planner"), "kms:GenerateDataKey", workKey, "the plan under the work prefix"},
		{role("finalizer"), "kms:Decrypt", workKey, "reading the plan"},
		{archiveMachine, "kms:Decrypt", workKey, "the Map's ItemReader"},
		{archiveMachine, "kms:GenerateDataKey", workKey, "the Map's ResultWriter"},
		{extractRole("ExtractPlanner"), "kms:Decrypt", extractArchiveKey, "reading the archive's central directory"},
		{extractRole("ExtractPlanner"), "kms:GenerateDataKey", workKey, "the jobs"},
		{extractRole("ExtractWorker"), "kms:Decrypt", extractArchiveKey, "copies and reads of the archive"},
		{extractRole("ExtractWorker"), "kms:GenerateDataKey", extractDestinationKey, "the extracted objects"},
		{extractRole("ExtractFinalizer"), "kms:GenerateDataKey", extractDestinationKey, "the report"},
		{d.Machine.Role, "kms:Decrypt", workKey, "the extract Map's ItemReader"},
	} {
		if !used[w.role+" "+w.action+" "+w.key] {
			t.Errorf("%s made no allowed %s on %s (%s)", w.role, w.action, w.key, w.why)
		}
	}
	if t.Failed() {
		var all []string
		for u := range used {
			all = append(all, u)
		}
		sort.Strings(all)
		t.Logf("KMS calls allowed:\n%s", strings.Join(all, "\n"))
	}

	// Exactly those keys: every KMS grant names configured keys (no
	// wildcard), and a role holds no key of a place it never touches.
	pols, err := d.Template.RolePolicies()
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{workKey: true, sourceKey: true, destinationKey: true, extractArchiveKey: true, extractDestinationKey: true}
	for r, ps := range pols {
		for _, p := range ps {
			for _, s := range p.Statements {
				for _, a := range s.Action {
					if !strings.HasPrefix(strings.ToLower(a), "kms:") {
						continue
					}
					for _, res := range s.Resource {
						if !keys[res] {
							t.Errorf("%s %s: %s on %q, not one of the configured keys", r, s.Sid, a, res)
						}
					}
				}
			}
		}
	}
	never := []struct{ role, action, key string }{
		{role("reader"), "kms:Decrypt", destinationKey},
		{role("abort"), "kms:GenerateDataKey", destinationKey},
		{role("worker"), "kms:Decrypt", extractArchiveKey},
		{extractRole("ExtractWorker"), "kms:Decrypt", sourceKey},
		{extractRole("ExtractPlanner"), "kms:GenerateDataKey", extractDestinationKey},
		{role("planner"), "kms:Decrypt", "arn:aws:kms:" + region + ":" + account + ":key/not-configured"},
	}
	for _, n := range never {
		dec, err := iameval.Evaluate(pols[n.role], iameval.Request{Action: n.action, Resource: n.key})
		if err != nil || dec.Allowed {
			t.Errorf("%s may %s on %s (%v): it never reads or writes there", n.role, n.action, n.key, errOr(err, dec.Statement))
		}
	}
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("allowed by %s", s)
}
