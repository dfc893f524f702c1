package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// plan says how many of the workers it was given the plan uses and why: a
// field of its JSON and a line of its summary. More workers than have a
// batch are not used, so 1,000 are no slower than 100.
func TestPlanSaysWhichWorkersItUses(t *testing.T) {
	args := func(workers string, extra ...string) []string {
		return append([]string{"plan", "--synthetic", "challenge", "--count", "3000", "--strategy", "chain", "--workers", workers}, extra...)
	}
	var at100, at1000 planSummary
	for _, c := range []struct {
		workers string
		sum     *planSummary
	}{{"100", &at100}, {"1000", &at1000}} {
		r := s3zip(t, nil, args(c.workers, "--json")...)
		if r.code != 0 {
			t.Fatalf("plan --workers %s: exit %d: %s", c.workers, r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), c.sum); err != nil {
			t.Fatalf("plan --workers %s --json: %v", c.workers, err)
		}
	}
	f := at1000.Fit
	if f.Workers < 1 || f.Workers >= 1000 || f.Workers > f.Batches || f.Why == "" {
		t.Errorf("fit at 1,000 workers: %+v: want fewer than 1,000 used, no more than the batches, and why", f)
	}
	if at1000.PredictedSeconds > at100.PredictedSeconds*1.0001 {
		t.Errorf("1,000 workers predicted %.2f s, 100 workers %.2f s: more workers must not be slower", at1000.PredictedSeconds, at100.PredictedSeconds)
	}
	r := s3zip(t, nil, args("1000")...)
	if want := fmt.Sprintf("workers used    %d of 1000: %s\n", f.Workers, f.Why); !strings.Contains(r.stdout, want) {
		t.Errorf("summary:\n%s\nwant the line %q", r.stdout, want)
	}
}
