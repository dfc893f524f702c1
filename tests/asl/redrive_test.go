package asl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// Redrive is emulated by the adapter (adapter.ts Redrive) as the Step
// Functions Developer Guide describes it ("Redriving executions",
// "Redriving Map Runs"): the execution continues from its unsuccessful
// state (entered, never exited) with the input that state was entered
// with, the execution's input and start unchanged; a redriven Distributed
// Map Run keeps its children that succeeded and re-runs the rest.

// batchHasPart reports whether the worker payload's batch builds part n.
func batchHasPart(payload json.RawMessage, n int) bool {
	var in struct {
		Items []struct {
			Part int `json:"part"`
		}
	}
	_ = json.Unmarshal(payload, &in)
	for _, it := range in.Items {
		if it.Part == n {
			return true
		}
	}
	return false
}

// A batch that fails with a TransientError past BuildBatch's retries fails
// the Map Run, which nothing catches: the execution fails at BuildParts
// with its upload and work kept (no Abort, no finalizer). Redriven, only
// the children that had not succeeded run, the finalizer completes the
// archive (every reader), and nothing is left.
func TestASLRedriveRunsOnlyFailedChildren(t *testing.T) {
	e := newEnv(t)
	for i := range 4 {
		key := fmt.Sprintf("in/more/%d.bin", i)
		e.want[key] = s3test.Bytes(uint64(40+i), 5*mib+1+i)
		e.srv.PutObject(t, "src", key, e.want[key])
	}
	broken := true
	e.fns.SetFault("worker", func(_ context.Context, _ int, payload json.RawMessage) error {
		if broken && batchHasPart(payload, 5) {
			return &stepfn.TransientError{Op: "UploadPart s3://dst/out/a.zip", Err: errors.New("500 InternalError (injected, every attempt)")}
		}
		return nil
	})
	req := request("out/a.zip", `,"maxConcurrency":1`)
	out := e.execute(t, req, "exec-redrive")
	if out.Status != "FAILED" || out.Error != "States.ExceedToleratedFailureThreshold" {
		t.Fatalf("execution %s %s, want FAILED at BuildParts (States.ExceedToleratedFailureThreshold)", out.Status, out.Error)
	}
	if n := len(e.fns.Calls("abort")) + len(e.fns.Calls("finalizer")); n != 0 {
		t.Fatalf("%d abort or finalizer invocations after a failure a retry may mend; want none (kept for Redrive)", n)
	}
	ups, err := e.s3.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: new("dst")})
	if err != nil || len(ups.Uploads) != 1 {
		t.Fatalf("uploads of the archive after the failure: %v (%v), want its one upload kept", ups, err)
	}
	var record struct {
		State   string `json:"state"`
		MapRuns map[string]struct {
			Children []*struct{ Status string } `json:"children"`
		} `json:"mapRuns"`
	}
	if err := json.Unmarshal(out.Redrive, &record); err != nil || record.State != "BuildParts" {
		t.Fatalf("redrive record %s (%v): want it to continue from BuildParts", out.Redrive, err)
	}
	children := record.MapRuns["BuildParts"].Children
	succeeded := 0
	for _, c := range children {
		if c != nil && c.Status == "SUCCEEDED" {
			succeeded++
		}
	}
	notRun := 0
	for _, c := range children {
		if c == nil {
			notRun++
		}
	}
	if succeeded == 0 || notRun == 0 {
		t.Fatalf("%d of %d children succeeded before the failure, %d never ran; the test needs both", succeeded, len(children), notRun)
	}
	planners, workers := len(e.fns.Calls("planner")), len(e.fns.Calls("worker"))

	broken = false
	again := Execute(t, e.url, nil, RunOptions{Execution: "exec-redrive", Redrive: out.Redrive})
	t.Logf("redriven: %s %s %s", again.Status, again.Error, trim(again.Cause, 300))
	if again.Status != "SUCCEEDED" {
		t.Fatalf("redriven execution %s %s", again.Status, again.Error)
	}
	if n := len(e.fns.Calls("planner")) - planners; n != 0 {
		t.Errorf("the redrive ran the planner %d times; it continues from BuildParts", n)
	}
	if n := len(e.fns.Calls("worker")) - workers; n != len(children)-succeeded {
		t.Errorf("the redrive ran %d worker batches, want the %d children that had not succeeded (of %d)", n, len(children)-succeeded, len(children))
	}
	t.Logf("children: %d, succeeded before the failure %d (%d never ran), run by the redrive %d", len(children), succeeded, notRun, len(e.fns.Calls("worker"))-workers)
	e.checkArchive(t, "out/a.zip")
	e.assertClean(t, "")
}

// The extract state machine the same way: a batch whose writes fail with a
// TransientError past RunBatch's retries fails RunJobs, which nothing
// catches (no Abort: the objects written stay); redriven, only the batches
// that had not succeeded run, every object is its entry, nothing is left.
func TestASLExtractRedriveRunsOnlyFailedChildren(t *testing.T) {
	e := newExtractEnv(t)
	broken := true
	e.fns.setFault("worker", func(attempt int, payload []byte) error {
		var in struct {
			Items []struct {
				Index int `json:"index"`
			}
		}
		_ = json.Unmarshal(payload, &in)
		if broken && len(in.Items) > 0 && in.Items[0].Index > 0 { // every batch but the first

			return &stepfn.TransientError{Op: "PutObject s3://dst/out/redriven/", Err: errors.New("500 InternalError (injected, every attempt)")}
		}
		return nil
	})
	req := `{"archive":{"bucket":"src","key":"in/a.zip"},"destination":{"bucket":"dst","prefix":"out/redriven/"},"options":{"smallStored":1048576,"maxConcurrency":1}}`
	out := e.execute(t, req, "extract-redrive")
	if out.Status != "FAILED" || out.Error != "States.ExceedToleratedFailureThreshold" {
		t.Fatalf("execution %s %s, want FAILED at RunJobs", out.Status, out.Error)
	}
	if n := e.fns.calls("abort") + e.fns.calls("finalizer"); n != 0 {
		t.Fatalf("%d abort or finalizer invocations after a failure a retry may mend; want none", n)
	}
	var record struct {
		State   string `json:"state"`
		MapRuns map[string]struct {
			Children []*struct{ Status string } `json:"children"`
		} `json:"mapRuns"`
	}
	if err := json.Unmarshal(out.Redrive, &record); err != nil || record.State != "RunJobs" {
		t.Fatalf("redrive record %s (%v): want it to continue from RunJobs", out.Redrive, err)
	}
	children := record.MapRuns["RunJobs"].Children
	succeeded := 0
	for _, c := range children {
		if c != nil && c.Status == "SUCCEEDED" {
			succeeded++
		}
	}
	if succeeded == 0 || succeeded == len(children) {
		t.Fatalf("%d of %d children succeeded before the failure; the test needs some that did and some that did not", succeeded, len(children))
	}
	workers := e.fns.calls("worker")
	broken = false
	again := Execute(t, e.url, nil, RunOptions{Execution: "extract-redrive", Redrive: out.Redrive})
	if again.Status != "SUCCEEDED" {
		t.Fatalf("redriven execution %s %s %s", again.Status, again.Error, trim(again.Cause, 300))
	}
	if n := e.fns.calls("worker") - workers; n != len(children)-succeeded {
		t.Errorf("the redrive ran %d worker batches, want the %d children that had not succeeded (of %d)", n, len(children)-succeeded, len(children))
	}
	t.Logf("children: %d, succeeded before the failure %d, run by the redrive %d", len(children), succeeded, e.fns.calls("worker")-workers)
	got := e.objects(t, "out/redriven/")
	for name, body := range e.want {
		if !bytes.Equal(got[name], body) {
			t.Errorf("%s: %d bytes, want %d", name, len(got[name]), len(body))
		}
	}
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}
