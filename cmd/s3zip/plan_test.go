package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// plan names the layout auto chose and counts in words that agree with
// their numbers.
func TestPlanSaysWhatAutoChose(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--synthetic", "small", "--count", "10", "--workers", "1"},
			[]string{"strategy        auto, chose uploads only (stream's layout)\n", "predicted with 1 worker ("}},
		{[]string{"--synthetic", "challenge", "--count", "30", "--workers", "1"},
			[]string{"strategy        auto, chose chained runs beside copies and uploads (auto's mix)\n"}},
		{[]string{"--synthetic", "challenge", "--count", "300", "--workers", "100", "--prefer", "cost"},
			[]string{"strategy        auto, chose copies and uploads (duo's layout)\n", "predicted with 100 workers ("}},
		{[]string{"--synthetic", "challenge", "--count", "30", "--strategy", "duo"}, []string{"strategy        duo\n"}},
	} {
		out := planSays(t, c.args, c.want)
		if strings.Contains(out, " 1 workers") || strings.Contains(out, " 1 jobs") {
			t.Errorf("plan %v counts one in the plural:\n%s", c.args, out)
		}
	}
}

// plan prints, for each group of prefixes a run touches, what the plan asks
// of S3's rates against what S3 serves it, and which group binds: chain's
// rounds over 3,000 challenge objects write the run's work area 22,876
// times, which one new keyspace serves at 3,500 a second.
func TestPlanSaysWhichPrefixBinds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--synthetic", "challenge", "--count", "3000", "--workers", "100", "--strategy", "chain"}, []string{
			"S3 rates        sources   3378 reads at 5500/s: at least 0.0 s\n",
			"                archive   2253 writes at 3500/s: at least 0.0 s\n",
			"                work area 6751 reads at 5500/s, 22876 writes at 3500/s: at least 5.5 s\n",
			"S3's rate for the work area binds (5.5 s)",
		}},
		{[]string{"--synthetic", "small", "--count", "100000", "--workers", "100"}, []string{
			"                work area 100 reads at 5500/s, 2 writes at 3500/s: at least 0.0 s\n",
			"S3's rate for the sources binds (17.2 s)",
		}},
	} {
		planSays(t, c.args, c.want)
	}
}

// planSays runs plan with args and checks that what it prints holds every
// line of want; it returns what plan printed.
func planSays(t *testing.T, args, want []string) string {
	t.Helper()
	var out bytes.Buffer
	if err := runPlan(context.Background(), args, &out); err != nil {
		t.Fatalf("plan %v: %v", args, err)
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("plan %v lacks %q:\n%s", args, w, out.String())
		}
	}
	return out.String()
}

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

// TestPlanPreferShowsTheOtherChoice: at 50 workers auto's time choice
// (chains, 3.4 s, $0.105) and its cost choice (duo with a share of its runs
// chained, 5.0 s, $0.068) differ; each summary prices the other exactly as
// the other run prices itself.
func TestPlanPreferShowsTheOtherChoice(t *testing.T) {
	run := func(prefer string) planSummary {
		var out bytes.Buffer
		args := []string{"--synthetic", "challenge", "--count", "3000", "--workers", "50", "--json", "--prefer", prefer}
		if err := runPlan(context.Background(), args, &out); err != nil {
			t.Fatalf("plan --prefer %s: %v", prefer, err)
		}
		var sum planSummary
		if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
			t.Fatal(err)
		}
		return sum
	}
	byTime, byCost := run("time"), run("cost")
	if byTime.Alternative == nil || byCost.Alternative == nil {
		t.Fatalf("alternatives: time %+v, cost %+v; want both named at 50 workers", byTime.Alternative, byCost.Alternative)
	}
	if a := byTime.Alternative; a.Prefer != "cost" || a.Seconds != byCost.PredictedSeconds || a.Dollars != byCost.PredictedDollars {
		t.Errorf("prefer time names %+v; prefer cost predicts %.3f s, $%.4f", *a, byCost.PredictedSeconds, byCost.PredictedDollars)
	}
	if a := byCost.Alternative; a.Prefer != "time" || a.Seconds != byTime.PredictedSeconds || a.Dollars != byTime.PredictedDollars {
		t.Errorf("prefer cost names %+v; prefer time predicts %.3f s, $%.4f", *a, byTime.PredictedSeconds, byTime.PredictedDollars)
	}
	if byCost.PredictedDollars >= byTime.PredictedDollars {
		t.Errorf("prefer cost: $%.4f, not cheaper than prefer time's $%.4f", byCost.PredictedDollars, byTime.PredictedDollars)
	}
	t.Logf("prefer time %.1f s $%.4f; prefer cost %.1f s $%.4f", byTime.PredictedSeconds, byTime.PredictedDollars, byCost.PredictedSeconds, byCost.PredictedDollars)
}
