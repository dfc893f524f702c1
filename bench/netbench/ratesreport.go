package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

const (
	ratesStartMarker = "<!-- bench-rates:start -->"
	ratesEndMarker   = "<!-- bench-rates:end -->"
)

// rateTable is a run under S3's scaled rates as Markdown: each strategy's
// time against the model's, what the model said the rates allow and which
// group binds, and how often the server said slow down.
func (r *report) rateTable() string {
	var b strings.Builder
	archive := int64(0)
	for _, s := range r.Runs {
		archive = max(archive, s.ArchiveBytes)
	}
	fmt.Fprintf(&b, "%d objects of the challenge distribution (seed %d), archive %s; N workers, each its own network namespace capped at %s each way, as are the planner and finalizer; S3's time to first byte %s; "+
		"**S3's request rates divided by F = %g**: the server answers 503 SlowDown past %.0f GET/HEAD and %.0f other requests a second for each of the sources' prefix, the archive's and the run's work prefix, after a second's burst, and the model prices the same rates; %d repetitions per run; predicted by the model's local profile before the runs.\n\n",
		r.Count, r.Seed, mib(archive), r.Shaping.Rate, r.Delay, r.RateFactor, r.Model.S3ReadRate, r.Model.S3WriteRate, r.Repeats)
	b.WriteString("| run | wall s (median) | min | max | predicted s | error | S3's rates allow, s (binds) | sources reads | archive writes | work writes | SlowDown answers | copied server-side | streamed | requests |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range r.Runs {
		binds := s.Rates.Binds
		if binds == "" {
			binds = "none"
		}
		if s.Failed == s.Reps {
			fmt.Fprintf(&b, "| %s | failed: %s | | | %.2f | | %.1f (%s) | | | | | | | |\n", s.Name, mdEscape(tail(s.FirstError, 200)), s.Predicted.Seconds, s.Rates.Seconds, binds)
			continue
		}
		failed := ""
		if s.Failed > 0 {
			failed = fmt.Sprintf(" (%d of %d failed)", s.Failed, s.Reps)
		}
		fmt.Fprintf(&b, "| %s | %.2f%s | %.2f | %.2f | %.2f | %+.0f%% | %.1f (%s) | %d | %d | %d | %d | %s | %s | %d |\n",
			s.Name, s.MedianSeconds, failed, s.MinSeconds, s.MaxSeconds, s.Predicted.Seconds, 100*s.modelError(),
			s.Rates.Seconds, binds, s.Rates.Sources.Reads, s.Rates.Archive.Writes, s.Rates.Work.Writes, s.SlowDowns,
			mib(s.CopiedBytes), mib(s.StreamedBytes), sum(s.Requests))
	}
	measured, predicted := r.rankings()
	for _, n := range r.Scale {
		fmt.Fprintf(&b, "\nAt %d workers, fastest first: measured %s; predicted %s.\n", n, strings.Join(measured[n], " < "), strings.Join(predicted[n], " < "))
	}
	return b.String()
}

// rankings are, at each N, the runs that succeeded fastest first, as
// measured (median) and as predicted.
func (r *report) rankings() (measured, predicted map[int][]string) {
	measured, predicted = map[int][]string{}, map[int][]string{}
	for _, n := range r.Scale {
		var at []runSummary
		for _, s := range r.Runs {
			if s.Workers == n && s.Failed < s.Reps {
				at = append(at, s)
			}
		}
		order := func(key func(runSummary) float64) []string {
			sort.SliceStable(at, func(i, j int) bool { return key(at[i]) < key(at[j]) })
			var names []string
			for _, s := range at {
				names = append(names, s.Strategy)
			}
			return names
		}
		measured[n] = order(func(s runSummary) float64 { return s.MedianSeconds })
		predicted[n] = order(func(s runSummary) float64 { return s.Predicted.Seconds })
	}
	return measured, predicted
}

// rateVerdict is what the run under rates shows: the model's largest error
// and whether it ranks the strategies as they measured. Two runs whose
// measured times lie within the model's tolerance of each other (25 %)
// may swap places without the ranking disagreeing: the bench cannot tell
// them apart.
func (r *report) rateVerdict() (lines, why []string, worstRun string) {
	worst := -1.0
	failed := 0
	for _, s := range r.Runs {
		if s.Failed == s.Reps {
			failed++
			continue
		}
		if e := math.Abs(s.modelError()); e > worst {
			worst, worstRun = e, s.Name
		}
	}
	if failed > 0 {
		why = append(why, fmt.Sprintf("%d runs failed", failed))
	}
	if worst >= 0 {
		lines = append(lines, fmt.Sprintf("model_max_error=%.2f", worst))
		worstRun = fmt.Sprintf("%.0f%% (%s)", 100*worst, worstRun)
	} else {
		lines = append(lines, "model_max_error=na")
	}
	agrees := failed == 0 && worst >= 0
	for _, n := range r.Scale {
		var at []runSummary
		for _, s := range r.Runs {
			if s.Workers == n && s.Failed < s.Reps {
				at = append(at, s)
			}
		}
		for i := range at {
			for j := range at {
				a, b := at[i], at[j]
				if a.Predicted.Seconds < b.Predicted.Seconds && a.MedianSeconds > b.MedianSeconds*1.25 {
					agrees = false
					why = append(why, fmt.Sprintf("at %d workers the model ranks %s before %s, measured %.1f s against %.1f s", n, a.Strategy, b.Strategy, a.MedianSeconds, b.MedianSeconds))
				}
			}
		}
	}
	lines = append(lines, fmt.Sprintf("ranking_agrees=%t", agrees))
	return lines, why, worstRun
}
