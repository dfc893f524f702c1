package workflow

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/s3zip/s3zip/plan"
)

// The report is written with If-None-Match: an object that took its key
// after the last check is kept, and the run says the report is missing;
// this execution's own report from an earlier attempt counts as written.
func TestWriteReportNeverReplaces(t *testing.T) {
	e := newEnv(t, nil)
	f := &Finalizer{S3: e.s3, Config: Config{WorkBucket: "work"}}
	p := &plan.Plan{Strategy: plan.StrategyDuo}
	a := &Archive{URI: "s3://dst/a.zip", Size: 22}
	job := &Job{Execution: "exec-1", Destination: Destination{Bucket: "dst", Key: "a.zip"}}
	key := ReportKey(job.Destination)

	e.srv.PutObject(t, "dst", key, []byte("someone else's"))
	err := f.writeReport(t.Context(), job, p, a, ReportStats{}, key)
	var de *DestinationExistsError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a DestinationExistsError", err)
	}
	if got := e.srv.GetObject(t, "dst", key); string(got) != "someone else's" {
		t.Fatalf("report key replaced: %q", got)
	}

	own, _ := json.Marshal(Report{Execution: "exec-1"})
	e.srv.PutObject(t, "dst", key, own)
	if err := f.writeReport(t.Context(), job, p, a, ReportStats{}, key); err != nil {
		t.Fatalf("the execution's own earlier report: %v", err)
	}

	job.Overwrite = true
	if err := f.writeReport(t.Context(), job, p, a, ReportStats{}, key); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(e.srv.GetObject(t, "dst", key), &r); err != nil || r.Archive.Size != 22 {
		t.Fatalf("with overwrite the report is replaced: %+v, %v", r, err)
	}
}
