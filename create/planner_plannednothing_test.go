package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3metrics"
)

// A run the planner refuses before writing anything has nothing to clean
// up, so the Runner does not run the Abort state: no requests after the
// refusal (an abort against an S3 that just refused the run only fails
// again, with retries and warnings around the real error).
func TestRunnerSkipsAbortWhenPlanningWroteNothing(t *testing.T) {
	e := newEnv(t, []object{{key: "p/a.txt", size: 10}, {key: "q/x/same.txt", size: 1}, {key: "q/y/same.txt", size: 2}})
	e.srv.PutObject(t, "dst", "taken.zip", []byte("someone's"))
	// "sub" and "sub/x": a file and a folder of the same name (a POSIX-backed
	// server cannot hold both keys; a manifest names them so).
	e.srv.PutObject(t, "src", "lists/clash.csv", []byte("key,name\np/a.txt,sub\nq/x/same.txt,sub/x\n"))
	clash := `{"source":{"bucket":"src","manifest":{"bucket":"src","key":"lists/clash.csv"}},"destination":{"bucket":"dst","key":%q},"options":{%s}}`
	for _, tc := range []struct {
		name    string
		request json.RawMessage
		want    any
		says    []string // what the refusal must name
	}{
		{"destination-exists", request("duo", "p/", "taken.zip", ""), new(*failure.DestinationExistsError), nil},
		{"duplicate-names", request("duo", "q/", "d.zip", `,"names":"flat"`), new(*failure.RequestError), nil},
		{"empty-prefix", request("duo", "none/", "e.zip", ""), new(*failure.RequestError), nil},
		{"missing-manifest", json.RawMessage(`{"source":{"manifest":{"bucket":"src","key":"none.csv"}},"destination":{"bucket":"dst","key":"m.zip"}}`), new(*failure.RequestError), nil},
		{"file-and-folder", json.RawMessage(fmt.Sprintf(clash, "c.zip", "")), new(*failure.RequestError), []string{`file "sub" (key "p/a.txt")`, `"sub/x" (key "q/x/same.txt")`, "manifest"}},
		{"file-and-folder-compressed", json.RawMessage(fmt.Sprintf(clash, "cz.zip", `"compression":"deflate"`)), new(*failure.RequestError), []string{`"sub/x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := s3metrics.New()
			r := e.runner()
			r.S3 = s3.New(e.s3.Options(), counter.Option())
			_, err := r.Run(context.Background(), tc.request, "plannednothing-"+tc.name)
			if err == nil || !errors.As(err, tc.want) {
				t.Fatalf("error %v, want a %T", err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %s", err, s)
				}
			}
			snap := counter.Snapshot()
			for _, op := range []string{"ListMultipartUploads", "DeleteObjects", "AbortMultipartUpload", "PutObject", "CreateMultipartUpload"} {
				if snap[op] > 0 {
					t.Errorf("%d %s after a refusal that wrote nothing (requests %v)", snap[op], op, snap)
				}
			}
		})
	}
	if left := e.srv.Leftovers(t, "work", "dst"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
