package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// plan names the layout auto chose and counts in words that agree with
// their numbers (issue 35, rough edge 10).
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
