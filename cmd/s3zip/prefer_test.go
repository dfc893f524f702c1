package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

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
