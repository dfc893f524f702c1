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
// plan and the report there), the extract planner's EXTRACT_PLANNER_TMP (it
// spools its jobs), every other function Lambda's default.
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
	xsrc, err := os.ReadFile(filepath.Join(repo, "infra", "lib", "extract-workflow.ts"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`export const EXTRACT_PLANNER_TMP = Size\.mebibytes\((\d+)\)`).FindSubmatch(xsrc)
	if m == nil {
		t.Fatal("infra/lib/extract-workflow.ts: no EXTRACT_PLANNER_TMP = Size.mebibytes(N)")
	}
	extractPlannerMB, _ := strconv.Atoi(string(m[1]))
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fns {
		want := lambdaDefaultTmpMB
		if strings.HasPrefix(f.ID, "ExtractWorkflowExtractPlanner") {
			want = extractPlannerMB
			seen["EXTRACT_PLANNER"] = true
		} else if !strings.HasPrefix(f.ID, "ExtractWorkflow") {
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
	if len(seen) != 3 {
		t.Errorf("functions found for %v and EXTRACT_PLANNER: %v, want the planner, the finalizer and the extract planner", infraMB, seen)
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

// bigSources stores three 24 MiB objects under in/big/: streamed in parts
// of 32 MiB, each worker part is assembled in the worker's memory.
func bigSources(d *Deployment) map[string][]byte {
	want := map[string][]byte{}
	for i := range 3 {
		want[fmt.Sprintf("in/big/%d.bin", i)] = s3test.Bytes(uint64(i), 24*mib)
	}
	d.S3.PutObjects(d.T, sourceBucket, want, s3test.WithChecksum(s3test.ChecksumCRC32))
	return want
}

// What Lambda refuses for want of /tmp or memory, the environments here
// refuse too, and the run fails the way it would on AWS: the function's
// error is the execution's, Abort leaves neither an archive nor an upload
// nor a work object. The same request with the template's sizes builds
// the archive.
//   - /tmp: the planner spools the plan's entries and part jobs there
//     (workflow.spoolPlan) after it has created the upload; cut to 1 MB, a
//     request whose entries file is bigger (1,500 keys of ~400 bytes) fails
//     with ENOSPC as the planner's error.
//   - memory: a stream worker assembles each 32 MiB part in memory; held to
//     16 MB it is killed as Lambda kills it (Runtime.ExitError, "signal:
//     killed"), having started well under that.
func TestDeployedLambdaLimits(t *testing.T) {
	spool := func(d *Deployment) map[string][]byte { return spoolSources(d, 1500) }
	streamed := func(req map[string]any) { req["options"].(map[string]any)["partSize"] = 32 * mib }
	for _, tc := range []struct {
		name     string
		function string
		limit    func(f *LambdaFunction) // nil: the template's
		sources  func(d *Deployment) map[string][]byte
		strategy string
		options  func(req map[string]any)
		// errorType and cause: what the function and the execution fail with
		errorType, cause string
	}{
		{"planner /tmp of 1 MB", "planner", func(f *LambdaFunction) { f.EphemeralStorageMB = 1 }, spool, "duo", nil, "Error", "no space left on device"},
		{"planner /tmp as templated", "planner", nil, spool, "duo", nil, "", ""},
		{"worker memory of 16 MB", "worker", func(f *LambdaFunction) { f.MemoryMB = 16 }, bigSources, "stream", streamed, "Runtime.ExitError", "signal: killed"},
		{"worker memory as templated", "worker", nil, bigSources, "stream", streamed, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Deploy(t)
			defer d.logsOnFailure()
			want := tc.sources(d)
			f := d.Functions[tc.function]
			if tc.limit != nil {
				tc.limit(f)
			}
			key := destinationPrefix + "limits.zip"
			req := request(key, tc.strategy)
			if tc.options != nil {
				tc.options(req)
			}
			out := d.Execute("limits-1", req)
			if tc.limit == nil {
				if out.Status != "SUCCEEDED" {
					t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
				}
				d.checkArchive(key, want)
				d.assertClean()
				return
			}
			if out.Status != "FAILED" || out.Error != tc.errorType || !strings.Contains(out.Cause, tc.cause) {
				t.Fatalf("execution %s %s, want FAILED %s saying %q (cause %.1000s)", out.Status, out.Error, tc.errorType, tc.cause, out.Cause)
			}
			failed := 0
			for _, r := range f.Results() {
				if r.FunctionError == "Unhandled" && strings.Contains(string(r.Payload), tc.cause) {
					failed++
				}
			}
			if failed == 0 {
				t.Errorf("no answer of the %s says %q: %+v", tc.function, tc.cause, f.Results())
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
