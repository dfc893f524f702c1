package deployed_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// A manifest's objects looked up by the read rounds, as deployed: the
// template's reader function pins them (HeadObject: s3:GetObject on the
// sources) in a pin round, then learns the CRC-32s the layout needs of the
// objects that store none with copies into a probe upload in the work
// prefix (CreateMultipartUpload, UploadPartCopy, AbortMultipartUpload) in a
// crc round. Every call is checked against the roles: no denial (the
// deployment fails the test on one), and the planner asks nothing of any
// source object.
func TestDeployedManifestLookups(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	// 3 MiB objects against 5 MiB parts: some headers are in one part and
	// their data in two, so the layout needs those CRC-32s before the workers.
	for i := range 4 {
		key := fmt.Sprintf("%sparts/%d.bin", sourcePrefix, i)
		body := s3test.Bytes(uint64(40+i), 3*mib+i)
		d.S3.PutObject(t, sourceBucket, key, body)
		want[key] = body
	}
	var list strings.Builder
	list.WriteString("key,name\n")
	for k := range want {
		fmt.Fprintf(&list, "%s,%s\n", k, strings.TrimPrefix(k, sourcePrefix))
	}
	d.S3.PutObject(t, d.Control, "manifests/lookups.csv", []byte(list.String()))
	req := map[string]any{
		"source":      map[string]any{"bucket": sourceBucket, "manifest": map[string]any{"bucket": d.Control, "key": "manifests/lookups.csv"}},
		"destination": map[string]any{"bucket": destinationBucket, "key": destinationPrefix + "manifest.zip"},
		"options":     map[string]any{"strategy": "stream", "partSize": 5 * mib},
	}
	out := d.Execute("lookups-1", req)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	if got := topLevelStates(out); got != "PlanArchive,HasWorkerParts,ReadEntries,PlanLayout,HasWorkerParts,ReadEntries,PlanLayout,HasWorkerParts,BuildParts,FinalizeArchive,ArchiveCreated" {
		t.Errorf("states entered: %s; want a pin round, then a crc round", got)
	}
	ops := map[string]int{}
	for _, c := range d.IAM.Calls(d.Functions["reader"].Role) {
		ops[strings.Fields(strings.TrimPrefix(c.What, "KMS for "))[0]]++
	}
	for _, op := range []string{"HeadObject", "CreateMultipartUpload", "UploadPartCopy", "AbortMultipartUpload"} {
		if ops[op] == 0 {
			t.Errorf("the reader made no %s (its calls: %v)", op, ops)
		}
	}
	for _, c := range d.IAM.Calls(d.Functions["planner"].Role) {
		if strings.Contains(c.What, "/"+sourceBucket+"/") {
			t.Errorf("the planner asked about a source object: %s", c.What)
		}
	}
	d.checkArchive(destinationPrefix+"manifest.zip", want)
	d.assertClean()
}

// topLevelStates is the states an execution entered, outside the Maps'
// children, comma-separated.
func topLevelStates(out *Outcome) string {
	var entered []string
	for _, ev := range out.Events {
		if ev.Type == "StateEntered" && ev.Child == "" {
			entered = append(entered, ev.State)
		}
	}
	return strings.Join(entered, ",")
}
