package deployed_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// lambdaDefaultTmpMB is the /tmp Lambda gives a function whose template
// sets no EphemeralStorage.
const lambdaDefaultTmpMB = 512

// Every function's /tmp is what the template says: the planner's and the
// finalizer's what infra/ sets (PLANNER_TMP, FINALIZER_TMP: they spool the
// plan and the report there), every other function Lambda's default.
func TestDeployedEphemeralStorageAsInfra(t *testing.T) {
	tp := requireTemplate(t)
	src, err := os.ReadFile(filepath.Join(repo, "infra", "lib", "archive-workflow.ts"))
	if err != nil {
		t.Fatal(err)
	}
	infraMB := map[string]int{}
	for _, m := range regexp.MustCompile(`export const (PLANNER|FINALIZER)_TMP = Size\.mebibytes\((\d+)\)`).FindAllSubmatch(src, -1) {
		infraMB[string(m[1])], _ = strconv.Atoi(string(m[2]))
	}
	if len(infraMB) != 2 {
		t.Fatalf("infra/lib/archive-workflow.ts: found %v, want PLANNER_TMP and FINALIZER_TMP as Size.mebibytes(N)", infraMB)
	}
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fns {
		want := lambdaDefaultTmpMB
		if !strings.HasPrefix(f.ID, "ExtractWorkflow") {
			for role, mb := range infraMB {
				if strings.Contains(f.ID, strings.ToUpper(role[:1])+strings.ToLower(role[1:])) {
					want = mb
					seen[role] = true
				}
			}
		}
		if f.EphemeralStorageMB != want {
			t.Errorf("%s: /tmp of %d MB, want %d", f.ID, f.EphemeralStorageMB, want)
		}
		if _, declared := tp.Resources[f.ID].Properties["EphemeralStorage"]; declared != (want != lambdaDefaultTmpMB) {
			t.Errorf("%s: EphemeralStorage declared in the template: %v; infra sets one: %v", f.ID, declared, want != lambdaDefaultTmpMB)
		}
	}
	if len(seen) != 2 {
		t.Errorf("functions found for %v: %v, want the planner and the finalizer", infraMB, seen)
	}
}

// spoolSources stores n one-line objects under in/spool/ whose keys are
// about 400 bytes long: the planner's entries file (each line names an
// entry and its source) is then about a kilobyte an object.
func spoolSources(d *Deployment, n int) map[string][]byte {
	segment := strings.Repeat("n", 96) // a path of short segments: readers that extract stay under NAME_MAX
	want := map[string][]byte{}
	for i := range n {
		key := fmt.Sprintf("in/spool/%04d/%s/%s/%s/%s", i, segment, segment, segment, segment)
		want[key] = fmt.Appendf(nil, "object %d\n", i)
	}
	d.S3.PutObjects(d.T, sourceBucket, want, s3test.WithChecksum(s3test.ChecksumCRC32))
	return want
}

// Lambda's /tmp holds what EphemeralStorage says, and so does each
// environment's here. The planner spools the plan's entries and part jobs
// there (workflow.spoolPlan) after it has created the upload. With its /tmp
// cut to 1 MB, a request whose entries file is bigger fails as on Lambda:
// ENOSPC is the planner's error and the execution's cause, and Abort leaves
// neither an archive nor an upload nor a work object. The same request at
// the template's size builds the archive.
func TestDeployedPlannerTmpIsEphemeralStorage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tmpMB int // 0: the template's
	}{
		{"1 MB", 1},
		{"the template's", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Deploy(t)
			defer d.logsOnFailure()
			want := spoolSources(d, 1500)
			planner := d.Functions["planner"]
			if tc.tmpMB > 0 {
				planner.EphemeralStorageMB = tc.tmpMB
			}
			key := destinationPrefix + "spool.zip"
			out := d.Execute("spool-1", request(key, "duo"))
			if tc.tmpMB == 0 {
				if out.Status != "SUCCEEDED" {
					t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
				}
				d.checkArchive(key, want)
				d.assertClean()
				return
			}
			const enospc = "no space left on device"
			if out.Status != "FAILED" || !strings.Contains(out.Cause, enospc) {
				t.Fatalf("execution %s %s, want FAILED with the planner's %q (cause %.1000s)", out.Status, out.Error, enospc, out.Cause)
			}
			results := planner.Results()
			if len(results) != 1 || results[0].FunctionError != "Unhandled" || !strings.Contains(string(results[0].Payload), enospc) {
				t.Errorf("the planner answered %d times, last %+v; want once, an Unhandled error saying %q", len(results), results, enospc)
			}
			if n, _, _ := d.Functions["abort"].Stats(); n == 0 {
				t.Errorf("abort was never invoked")
			}
			var nf *types.NotFound
			if _, err := d.Admin.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(destinationBucket), Key: aws.String(key)}); !errors.As(err, &nf) {
				t.Errorf("HEAD s3://%s/%s: %v, want NotFound: no archive", destinationBucket, key, err)
			}
			d.assertClean()
		})
	}
}
