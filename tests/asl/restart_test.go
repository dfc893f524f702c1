package asl_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/s3zip/s3zip/create"
)

// conflict is the finalizer's answer when S3 ends the archive's upload at
// its conditional completion (409 ConditionalRequestConflict).
func conflict() error {
	return &create.UploadRestartError{Destination: "s3://dst/out/a.zip", Err: errors.New("409 ConditionalRequestConflict (injected)")}
}

// S3 ends the upload at its completion: FinalizeArchive's Catch sends the
// run to RestartUpload, where the planner aborts the ended upload and
// starts a new one; BuildParts builds every part into it, and the second
// completion gives the archive (every reader), nothing left.
func TestASLRestartsTheUploadS3Ended(t *testing.T) {
	e := newEnv(t)
	var finalizes atomic.Int32
	e.fns.SetFault("finalizer", func(context.Context, int, json.RawMessage) error {
		if finalizes.Add(1) == 1 {
			return conflict()
		}
		return nil
	})
	out := e.execute(t, request("out/a.zip", ""), "exec-restart")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, trim(out.Cause, 2000))
	}
	want := []string{"PlanArchive", "HasWorkerParts", "BuildParts", "FinalizeArchive", "RestartUpload", "BuildParts", "FinalizeArchive", "ArchiveCreated"}
	if got := topLevelStates(out); !slices.Equal(got, want) {
		t.Errorf("states entered: %v, want %v", got, want)
	}
	planners := e.fns.Calls("planner")
	if len(planners) != 2 {
		t.Fatalf("planner invoked %d times, want 2 (PlanArchive, RestartUpload)", len(planners))
	}
	first, ok1 := planners[0].Output.(*create.Job)
	second, ok2 := planners[1].Output.(*create.Job)
	if !ok1 || !ok2 {
		t.Fatalf("planner outputs %T, %T; want two jobs", planners[0].Output, planners[1].Output)
	}
	if second.UploadID == "" || second.UploadID == first.UploadID || second.Restarts != 1 || second.PartsKey != first.PartsKey {
		t.Errorf("restarted job: upload %q (was %q), restarts %d, parts %q (was %q); want a new upload, one restart, the same plan", second.UploadID, first.UploadID, second.Restarts, second.PartsKey, first.PartsKey)
	}
	workers, built := e.fns.Calls("worker"), 0
	for _, c := range workers {
		if c.Err == nil {
			built++
		}
	}
	if built < 2 || built%2 != 0 {
		t.Errorf("%d worker batches succeeded; want every batch twice (once per upload)", built)
	}
	if n := len(e.fns.Calls("abort")); n != 0 {
		t.Errorf("abort invoked %d times on a run that restarted and succeeded", n)
	}
	e.checkArchive(t, "out/a.zip")
	e.assertClean(t, "")
}

// S3 ends every upload at its completion: three restarts, then
// RestartUpload fails with UploadRestartError, Abort removes the last
// upload and the work, and the execution fails with that error.
func TestASLRestartsAtMostThreeTimes(t *testing.T) {
	e := newEnv(t)
	e.fns.SetFault("finalizer", func(context.Context, int, json.RawMessage) error { return conflict() })
	out := e.execute(t, request("out/a.zip", ""), "exec-restart-every-time")
	if out.Status != "FAILED" || out.Error != "UploadRestartError" {
		t.Fatalf("execution %s %q, want FAILED UploadRestartError", out.Status, out.Error)
	}
	if !strings.Contains(out.Cause, "started again 3 times") {
		t.Errorf("execution cause %q does not say how many times the upload was started again", trim(out.Cause, 500))
	}
	restarts := 0
	for _, s := range topLevelStates(out) {
		if s == "RestartUpload" {
			restarts++
		}
	}
	if restarts != 4 || len(e.fns.Calls("finalizer")) != 4 {
		t.Errorf("RestartUpload entered %d times, finalizer invoked %d; want 4 each (three restarts, the fourth refused)", restarts, len(e.fns.Calls("finalizer")))
	}
	if n := len(e.fns.Calls("abort")); n != 1 {
		t.Errorf("abort invoked %d times, want 1", n)
	}
	e.assertClean(t, "out/a.zip")
}
