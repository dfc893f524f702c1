package asl_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// Step Functions' 256 KiB payload quota, as the adapter enforces it.
const dataLimitExceeded = "States.DataLimitExceeded"

// A batch of ~17,000 small entries without stored CRC-32s: its worker
// computes every CRC, which in the batch's output were 350 KB, over the
// quota of a Map child's result (States.DataLimitExceeded on AWS). Through
// S3 they pass, and every entry is right.
func TestASLManySmallEntriesWithoutCRC(t *testing.T) {
	e := newEnv(t)
	const n = 19000
	objects := s3test.NumberedObjects("many/", n, 256)
	e.srv.PutObjects(t, "src", objects)
	e.fns.Configure(func(c *create.Config) { c.PartsPerBatch = 8 })
	req := json.RawMessage(`{"source":{"bucket":"src","prefix":"many/"},"destination":{"bucket":"dst","key":"out/many.zip"},"options":{"strategy":"duo","partSize":5242880}}`)
	// ~17,000 ranged GETs by one worker on a shared machine: more than the usual two minutes.
	out := Execute(t, e.url, req, RunOptions{Execution: "exec-many", Timeout: 8 * time.Minute})
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, trim(out.Cause, 2000))
	}
	path := filepath.Join(t.TempDir(), "many.zip")
	e.srv.DownloadFile(t, "dst", "out/many.zip", path)
	zipcheck.CheckWith(t, zipcheck.ReaderGo, path, zipcheck.WantObjects(objects, "many/"))
	e.assertClean(t, "")
}

// What Step Functions refuses, the adapter refuses: an execution input, a
// Map child's result, a Task's result over 256 KiB. The Map child fails (and
// with it the Map Run, kept for Redrive); a Task state's result ends the
// execution at once, with no Catch: States.ALL does not catch
// States.DataLimitExceeded.
func TestASLRefusesOversizedPayloads(t *testing.T) {
	padded := func(out any) any {
		doc, _ := json.Marshal(out)
		var m map[string]any
		_ = json.Unmarshal(doc, &m)
		m["padding"] = strings.Repeat("x", 300<<10)
		return m
	}
	t.Run("execution-input", func(t *testing.T) {
		e := newEnv(t)
		out := e.execute(t, request("out/a.zip", `,"comment":"`+strings.Repeat("x", 300<<10)+`"`), "exec-big-input")
		if out.Status != "FAILED" || out.Error != dataLimitExceeded || !strings.Contains(out.Cause, "execution's input") {
			t.Fatalf("execution %s: %s: %s; want FAILED with %s for the execution's input", out.Status, out.Error, trim(out.Cause, 300), dataLimitExceeded)
		}
		if calls := e.fns.Calls(""); len(calls) != 0 {
			t.Errorf("%d functions invoked for an execution Step Functions would not start", len(calls))
		}
	})
	t.Run("map-child-result", func(t *testing.T) {
		e := newEnv(t)
		e.fns.SetOutput("worker", padded)
		out := e.execute(t, request("out/a.zip", ""), "exec-big-child")
		// The child fails with States.DataLimitExceeded, which no Catch in it
		// handles, so the Map Run fails, and a failed Map Run is kept for
		// Redrive, not aborted (the work bucket's lifecycle rules remove it).
		if out.Status != "FAILED" || out.Error != "States.ExceedToleratedFailureThreshold" || !strings.Contains(out.Cause, dataLimitExceeded) {
			t.Fatalf("execution %s: %s: %s; want FAILED at BuildParts, the child's %s in the cause", out.Status, out.Error, trim(out.Cause, 300), dataLimitExceeded)
		}
		if len(e.fns.Calls("abort")) != 0 || len(e.fns.Calls("finalizer")) != 0 {
			t.Errorf("abort ran %d times, finalizer %d; a failed Map Run is kept for Redrive", len(e.fns.Calls("abort")), len(e.fns.Calls("finalizer")))
		}
	})
	t.Run("task-result", func(t *testing.T) {
		e := newEnv(t)
		e.fns.SetOutput("planner", padded)
		out := e.execute(t, request("out/a.zip", ""), "exec-big-plan")
		if out.Status != "FAILED" || out.Error != dataLimitExceeded || !strings.Contains(out.Cause, "PlanArchive") {
			t.Fatalf("execution %s: %s: %s; want FAILED with %s at PlanArchive", out.Status, out.Error, trim(out.Cause, 300), dataLimitExceeded)
		}
		if n := len(e.fns.Calls("abort")); n != 0 {
			t.Errorf("abort ran %d times: PlanArchive's Catch (States.ALL) must not catch %s", n, dataLimitExceeded)
		}
	})
}
