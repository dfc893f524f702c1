package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/s3zip/s3zip/plan"
)

// runSummary is one run over its repetitions: wall time as median, min and
// max; the other numbers are those of the median repetition, except peak
// memory, the largest seen.
type runSummary struct {
	runSpec
	Reps            int              `json:"reps"`
	Failed          int              `json:"failed"`
	FirstError      string           `json:"firstError,omitempty"`
	MedianSeconds   float64          `json:"medianSeconds"`
	MinSeconds      float64          `json:"minSeconds"`
	MaxSeconds      float64          `json:"maxSeconds"`
	ArchiveBytes    int64            `json:"archiveBytes"`
	Parts           int              `json:"parts"`
	Batches         int              `json:"batches"`
	StreamedBytes   int64            `json:"streamedBytes"`
	CopiedBytes     int64            `json:"copiedBytes"`
	LinkToWorkers   int64            `json:"linkToWorkers"`
	LinkFromWorkers int64            `json:"linkFromWorkers"`
	LinkToControl   int64            `json:"linkToControl"`
	LinkFromControl int64            `json:"linkFromControl"`
	Requests        map[string]int64 `json:"requests"`
	PeakWorkerRSS   int64            `json:"peakWorkerRSS"`
	Predicted       plan.Prediction  `json:"predicted"` // by the local profile, before the run
	Rates           plan.RateDemand  `json:"rates"`     // what the plan asks of S3's rates, by the same profile
	SlowDowns       int64            `json:"slowDowns"` // the median repetition's requests refused past the rates
	All             []repResult      `json:"repetitions"`
}

func summarize(r runSpec, reps []repResult) runSummary {
	s := runSummary{runSpec: r, Reps: len(reps), All: reps}
	var ok []repResult
	for _, x := range reps {
		s.PeakWorkerRSS = max(s.PeakWorkerRSS, x.PeakWorkerRSS)
		if x.Err != "" {
			s.Failed++
			if s.FirstError == "" {
				s.FirstError = x.Err
			}
			continue
		}
		ok = append(ok, x)
	}
	if len(ok) == 0 {
		return s
	}
	sort.Slice(ok, func(a, b int) bool { return ok[a].WallSeconds < ok[b].WallSeconds })
	m := ok[len(ok)/2]
	s.MinSeconds, s.MaxSeconds = ok[0].WallSeconds, ok[len(ok)-1].WallSeconds
	if len(ok)%2 == 0 {
		s.MedianSeconds = (ok[len(ok)/2-1].WallSeconds + m.WallSeconds) / 2
	} else {
		s.MedianSeconds = m.WallSeconds
	}
	s.ArchiveBytes, s.Parts, s.Batches = m.ArchiveBytes, m.Parts, m.Batches
	s.StreamedBytes, s.CopiedBytes = m.StreamedBytes, m.CopiedBytes
	s.LinkToWorkers, s.LinkFromWorkers = m.LinkToWorkers, m.LinkFromWorkers
	s.LinkToControl, s.LinkFromControl = m.LinkToControl, m.LinkFromControl
	s.Requests, s.SlowDowns = m.Requests, m.SlowDowns
	return s
}

type report struct {
	Label   string    `json:"label"`
	When    time.Time `json:"when"`
	Machine string    `json:"machine"`
	Command string    `json:"command"`
	Count   int       `json:"count"`
	Seed    uint64    `json:"seed"`
	Workers int       `json:"workers"`
	Scale   []int     `json:"scale"`
	Repeats int       `json:"repeats"`
	Shaping shaping   `json:"shaping"`
	Delay   string    `json:"delay"` // S3's time to first byte, added by the server's proxy
	// Calibration is the server as measured before the runs; the link is
	// scaled from it and the model's local profile filled from it.
	Calibration        calibration  `json:"calibration"`
	LinkBytesPerSecond float64      `json:"linkBytesPerSecond"`
	LinksWide          float64      `json:"linksWide"`
	Model              plan.Model   `json:"model"`
	SourceCRC          bool         `json:"sourceCRC"`
	Notes              []string     `json:"notes,omitempty"`
	Runs               []runSummary `json:"runs"`
	Extract            []extractRun `json:"extract,omitempty"`
	// RateFactor, when set, is F: the server refused past S3's rates / F.
	RateFactor float64 `json:"rateFactor,omitempty"`
}

func (r *report) find(name string) *runSummary {
	for i := range r.Runs {
		if r.Runs[i].Strategy+"-"+fmt.Sprint(r.Runs[i].Workers) == name && r.Runs[i].Failed < r.Runs[i].Reps {
			return &r.Runs[i]
		}
	}
	return nil
}

// table is the report as Markdown.
func (r *report) table() string {
	var b strings.Builder
	archive := int64(0)
	for _, s := range r.Runs {
		archive = max(archive, s.ArchiveBytes)
	}
	fmt.Fprintf(&b, "%d objects of the challenge distribution (seed %d, %s), archive %s; N workers, each its own network namespace capped at %s each way (the server, calibrated at %.0f MB/s of UploadPart, is %.0f such links wide), as are the planner and finalizer; S3's time to first byte %s; %d repetitions per run; predicted by the model's local profile before the runs.\n\n",
		r.Count, r.Seed, map[bool]string{true: "CRC-32 stored with each source", false: "no checksum stored with the sources, so CRC-32s come from S3's answers to the copies that place the objects, or S3 computes them"}[r.SourceCRC],
		mib(archive), r.Shaping.Rate, r.Calibration.IngestRate/1e6, r.LinksWide, r.Delay, r.Repeats)
	b.WriteString("| run | stands for | wall s (median) | min | max | predicted s | error | through workers (shaped links, in/out) | through planner + finalizer | archive bytes streamed | copied server-side | requests | requests by API | peak worker RSS |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n")
	for _, s := range r.Runs {
		if s.Failed == s.Reps {
			fmt.Fprintf(&b, "| %s | %s | failed | | | %.2f | | | | | | | %s | |\n", s.Name, s.Stands, s.Predicted.Seconds, mdEscape(tail(s.FirstError, 300)))
			continue
		}
		var ops []string
		for _, op := range sortedOps(s.Requests) {
			ops = append(ops, fmt.Sprintf("%s %d", op, s.Requests[op]))
		}
		failed := ""
		if s.Failed > 0 {
			failed = fmt.Sprintf(" (%d of %d failed)", s.Failed, s.Reps)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f%s | %.2f | %.2f | %.2f | %+.0f%% | %s (%s / %s) | %s | %s (%.1f%%) | %s | %d | %s | %s |\n",
			s.Name, s.Stands, s.MedianSeconds, failed, s.MinSeconds, s.MaxSeconds, s.Predicted.Seconds, 100*s.modelError(),
			mib(s.LinkToWorkers+s.LinkFromWorkers), mib(s.LinkToWorkers), mib(s.LinkFromWorkers), mib(s.LinkToControl+s.LinkFromControl),
			mib(s.StreamedBytes), 100*float64(s.StreamedBytes)/float64(max(s.ArchiveBytes, 1)), mib(s.CopiedBytes),
			sum(s.Requests), strings.Join(ops, ", "), mib(s.PeakWorkerRSS))
	}
	b.WriteString(extractTable(r.Extract, r.Shaping.Rate))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s.\n", n)
	}
	return b.String()
}

func (r *report) write(o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	doc, _ := json.MarshalIndent(r, "", "  ")
	results := filepath.Join(o.out, "results.json")
	if err := os.WriteFile(results, doc, 0o644); err != nil {
		return err
	}
	table := r.table()
	if r.RateFactor > 0 {
		table = r.rateTable()
	}
	if err := os.WriteFile(filepath.Join(o.out, "table.md"), []byte(table), 0o644); err != nil {
		return err
	}
	fmt.Printf("\n%s\nmachine: %s\ncommand: %s\nresults: %s\n", table, r.Machine, r.Command, results)
	if o.chart != "" {
		cmd := exec.Command(o.python, "bench/chart.py", results, o.chart)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		fmt.Printf("chart: %s\n", o.chart)
	}
	if o.readme != "" {
		if err := r.updateReadme(o.readme, o.chart); err != nil {
			return err
		}
		fmt.Printf("README: %s Performance section updated\n", o.readme)
	}
	r.printVerdict()
	return nil
}

const (
	startMarker = "<!-- bench:start -->"
	endMarker   = "<!-- bench:end -->"
)

// updateReadme replaces what lies between the markers, or adds a Performance
// section with them at the end.
func (r *report) updateReadme(path, chart string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if r.RateFactor > 0 {
		return replaceSection(path, string(raw), ratesStartMarker, ratesEndMarker, r.rateSection())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n<!-- written by `make bench` (bench/netbench); edits here are overwritten -->\n", startMarker)
	fmt.Fprintf(&b, "Each emulated Lambda's link is scaled to 1/%.0f of what the local S3 server was measured to take in, because on AWS S3 is thousands of Lambdas wide while one server on 2 cores is only a few 600 Mbit/s links wide. ", r.LinksWide)
	b.WriteString("A run here stands for the same run on AWS with N Lambdas and an S3 that does not slow down: what it shows is N workers against one, and the model's local profile predicted every run before it ran.")
	if c := r.Calibration; c.ThroughGetRate > 0 && r.LinkBytesPerSecond > 0 {
		wide := min(c.ThroughGetRate, c.ThroughIngestRate) / r.LinkBytesPerSecond
		fmt.Fprintf(&b, " What the server's own client measures overstates what the workers get, though: with all %d worker links streaming at once the machine carried %.0f MB/s in and %.0f MB/s out (the proxy, the links and the workers share its 2 cores with the server), %.0f links' worth", r.Workers, c.ThroughGetRate/1e6, c.ThroughIngestRate/1e6, wide)
		if wide+0.5 >= float64(r.Workers) {
			fmt.Fprintf(&b, " once each link was narrowed to that: at every N here the links, not the machine, bound streaming, as S3 never bounds Lambdas.")
		} else {
			fmt.Fprintf(&b, ", so beyond N = %.0f this machine, not the fan-out, bounds the streamed share; the model knows it (the local profile's server rates are these).", wide)
		}
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Measured %s on %s with `%s` (bench/README.md says how).\n\n", r.When.Format("2006-01-02"), r.Machine, map[bool]string{true: "make " + r.Label, false: r.Command}[r.Label != ""])
	b.WriteString(r.table())
	if chart != "" {
		rel, err := filepath.Rel(filepath.Dir(path), chart)
		if err != nil {
			rel = chart
		}
		fmt.Fprintf(&b, "\n![wall time per run](%s)\n", rel)
	}
	lines, _, _ := r.verdict()
	fmt.Fprintf(&b, "\nThe issue's targets, as the run printed them: `%s`.\n", strings.Join(lines, "`, `"))
	b.WriteString(endMarker)
	return replaceSection(path, string(raw), startMarker, endMarker, b.String())
}

// rateSection is the run under S3's scaled rates, between its markers.
func (r *report) rateSection() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n<!-- written by `make bench-rates` (bench/netbench -s3-rates); edits here are overwritten -->\n", ratesStartMarker)
	fmt.Fprintf(&b, "Measured %s on %s with `%s` (bench/README.md says how).\n\n", r.When.Format("2006-01-02"), r.Machine, map[bool]string{true: "make " + r.Label, false: r.Command}[r.Label != ""])
	b.WriteString(r.rateTable())
	lines, why, _ := r.rateVerdict()
	fmt.Fprintf(&b, "\nAs the run printed it: `%s`", strings.Join(lines, "`, `"))
	if len(why) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(why, "; "))
	}
	b.WriteString(".\n")
	b.WriteString(ratesEndMarker)
	return b.String()
}

// replaceSection writes section over what lies between start and end in
// s, or adds it at the end, to path.
func replaceSection(path, s, start, end, section string) error {
	i, j := strings.Index(s, start), strings.Index(s, end)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + section + s[j+len(end):]
	case i < 0 && j < 0:
		s = strings.TrimRight(s, "\n") + "\n\n## Performance\n\n" + section + "\n"
	default:
		return fmt.Errorf("%s: one of %s and %s is missing or they are out of order", path, start, end)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// modelError is the prediction's error relative to the median measured.
func (s runSummary) modelError() float64 {
	if s.MedianSeconds <= 0 {
		return 0
	}
	return s.Predicted.Seconds/s.MedianSeconds - 1
}

// printVerdict prints the three target numbers as the last three
// lines, with the reason on the line before when one cannot be measured.
func (r *report) printVerdict() {
	lines, why, worst := r.verdict()
	if r.RateFactor > 0 {
		lines, why, worst = r.rateVerdict()
	}
	if worst != "" {
		fmt.Println("model: largest error " + worst)
	}
	if len(why) > 0 {
		fmt.Println("note: " + strings.Join(why, "; "))
	}
	fmt.Println(strings.Join(lines, "\n"))
}

// verdict is the three target numbers, one line each, why any is
// not measured, and the run the model missed most, by how much.
func (r *report) verdict() (lines, why []string, worstRun string) {
	duo1, auto := r.find("duo-1"), r.find(fmt.Sprintf("auto-%d", r.Workers))
	switch {
	case duo1 != nil && auto != nil && auto.MedianSeconds > 0:
		lines = append(lines, fmt.Sprintf("speedup_auto_vs_duo1=%.2f", duo1.MedianSeconds/auto.MedianSeconds))
	default:
		why = append(why, "speedup_auto_vs_duo1 is na: "+r.missing("duo-1", duo1, "auto", auto))
		lines = append(lines, "speedup_auto_vs_duo1=na")
	}
	// Chain at one worker against duo at one worker: how much faster one
	// Lambda is when it keeps its chains' round trips in flight.
	switch chain1 := r.find("chain-1"); {
	case duo1 != nil && chain1 != nil && chain1.MedianSeconds > 0:
		lines = append(lines, fmt.Sprintf("chain1_vs_duo1=%.2f", duo1.MedianSeconds/chain1.MedianSeconds))
	default:
		why = append(why, "chain1_vs_duo1 is na: "+r.missing("duo-1", duo1, "chain-1", chain1))
		lines = append(lines, "chain1_vs_duo1=na")
	}
	chain := r.find(fmt.Sprintf("chain-%d", r.Workers))
	if chain != nil && chain.ArchiveBytes > 0 {
		lines = append(lines, fmt.Sprintf("chain_streamed_fraction=%.4f", float64(chain.StreamedBytes)/float64(chain.ArchiveBytes)))
	} else {
		why = append(why, "chain_streamed_fraction is na: "+r.missing("", nil, "chain", chain))
		lines = append(lines, "chain_streamed_fraction=na")
	}
	worst, worstRun := -1.0, ""
	for _, s := range r.Runs {
		if s.Failed == s.Reps {
			continue
		}
		if e := math.Abs(s.modelError()); e > worst {
			worst, worstRun = e, s.Name
		}
	}
	if worst >= 0 {
		lines = append(lines, fmt.Sprintf("model_max_error=%.2f", worst))
		worstRun = fmt.Sprintf("%.0f%% (%s)", 100*worst, worstRun)
	} else {
		why = append(why, "model_max_error is na: no run succeeded")
		lines = append(lines, "model_max_error=na")
	}
	return lines, why, worstRun
}

func (r *report) missing(aName string, a *runSummary, bName string, b *runSummary) string {
	var why []string
	if aName != "" && a == nil {
		why = append(why, "the "+aName+" run did not succeed")
	}
	if b == nil {
		reason := "the " + bName + " run did not succeed"
		for _, n := range r.Notes {
			if strings.Contains(n, fmt.Sprintf("%q", bName)) {
				reason = "strategy " + bName + " does not exist yet (" + n + ")"
			}
		}
		why = append(why, reason)
	}
	return strings.Join(why, ", ")
}

func mib(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%.0f GiB", float64(n)/(1<<30))
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
