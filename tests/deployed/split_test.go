package deployed_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/outputschema"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

func splitRequest(key string) map[string]any {
	req := request(key, "duo")
	req["options"].(map[string]any)["splitSize"] = 8 * mib
	return req
}

// A split run as deployed: the planner creates every archive's upload,
// the one BuildParts Map sends each part to its archive's, the finalizer
// completes each; every call checked against the roles. Each archive is
// read alone by every reader; together they hold the sources; the output
// (checked against docs/output.schema.json) lists them.
func TestDeployedSplitArchives(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	key := destinationPrefix + "split.zip"
	out := d.Execute("split-1", splitRequest(key))
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	res := outputschema.Decode[create.FinalizeOutput](t, out.Output)
	if len(res.Archives) < 2 {
		t.Fatalf("%d archives in the output, want several: %s", len(res.Archives), out.Output)
	}
	seen := map[string]bool{}
	for k, a := range res.Archives {
		akey := create.ArchiveKey(key, k)
		path := filepath.Join(t.TempDir(), fmt.Sprintf("%d.zip", k))
		d.S3.DownloadFile(t, destinationBucket, akey, path)
		got, err := zipcheck.CheckReader(zipcheck.ReaderGo, path)
		if err != nil {
			t.Fatal(err)
		}
		var here []zipcheck.Want
		for _, e := range got {
			body, ok := want[sourcePrefix+e.Name]
			if !ok || seen[e.Name] {
				t.Fatalf("archive %d holds %q: no source, or one already in another archive", k+1, e.Name)
			}
			seen[e.Name] = true
			here = append(here, zipcheck.WantBytes(e.Name, body))
		}
		zipcheck.Check(t, path, here)
		if a.Entries != len(here) || a.URI != "s3://"+destinationBucket+"/"+akey {
			t.Errorf("output archive %d: %+v; it is %s with %d entries", k+1, a, akey, len(here))
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the archives hold %d of the %d sources", len(seen), len(want))
	}
	d.assertClean()
}

// A split run that fails after its first archive is complete: S3's CRC-32
// of the second archive made to differ, so its finalizer deletes that one
// and fails (ChecksumMismatchError); Abort then deletes the first, which
// the finalizer recorded, with the abort role's grant. None is left.
func TestDeployedSplitFailureLeavesNone(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	sources(d)
	key := destinationPrefix + "split-fails.zip"
	second := create.ArchiveKey(key, 1)
	d.SetTamper(func(op string, resp *http.Response) {
		if op == "HeadObject" && strings.HasSuffix(resp.Request.URL.Path, second) && resp.Header.Get("X-Amz-Checksum-Crc32") != "" {
			resp.Header.Set("X-Amz-Checksum-Crc32", "AAAAAA==")
		}
	})
	out := d.Execute("split-fails-1", splitRequest(key))
	if out.Status != "FAILED" || out.Error != "ChecksumMismatchError" {
		t.Fatalf("execution %s %s, want FAILED ChecksumMismatchError (cause %.500s)", out.Status, out.Error, out.Cause)
	}
	var deleted []string
	for _, c := range d.IAM.Calls(d.Functions["abort"].Role) {
		if strings.HasPrefix(c.What, "DeleteObject") {
			deleted = append(deleted, c.What)
		}
	}
	if !slices.ContainsFunc(deleted, func(s string) bool { return strings.Contains(s, create.ArchiveKey(key, 0)) }) {
		t.Errorf("abort deleted %v; want the first archive, which the run completed", deleted)
	}
	list, err := d.Admin.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(destinationBucket), Prefix: aws.String(strings.TrimSuffix(key, ".zip"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		t.Errorf("left behind: s3://%s/%s", destinationBucket, aws.ToString(o.Key))
	}
	d.assertClean()
}
