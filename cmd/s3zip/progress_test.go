package main

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
)

// A run's progress as the Runner reports it: planning (which says nothing
// until it ends), then parts, then the final part.
var runProgress = []create.Progress{
	{Phase: create.PhasePlanning},
	{Phase: create.PhaseBuilding, Parts: 57, Bytes: 301 << 20},
	{Phase: create.PhaseBuilding, Parts: 57, PartsDone: 20, Bytes: 301 << 20, BytesDone: 100 << 20},
	{Phase: create.PhaseFinalizing, Parts: 57, PartsDone: 56, Bytes: 301 << 20, BytesDone: 300 << 20},
	{Phase: create.PhaseDone, Parts: 57, PartsDone: 57, Bytes: 301 << 20, BytesDone: 301 << 20},
}

func TestProgressPrinter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		want     []string
	}{
		{"terminal", true, []string{"planning: listing sources", "] 57/57 parts  301.00 MiB / 301.00 MiB"}},
		{"plain", false, []string{"planning: listing sources, learning CRC-32s\nplanned in 0.", " s\nbuilding 57 parts, 301.00 MiB\n", "done: parts 57/57, 301.00 MiB of 301.00 MiB\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newProgress(&buf, tc.terminal)
			p.update(runProgress[0])
			time.Sleep(500 * time.Millisecond) // planning: the terminal line ticks on its own
			for _, pr := range runProgress[1:] {
				p.update(pr)
			}
			p.finish(nil)
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("progress lacks %q:\n%q", w, out)
				}
			}
			if n := strings.Count(out, "\r\033[Kplanning"); tc.terminal && n < 2 {
				t.Errorf("planning drawn %d times in 0.5 s, want it to tick:\n%q", n, out)
			}
			if !tc.terminal && strings.Contains(out, "\r") {
				t.Errorf("carriage returns in plain output: %q", out)
			}
		})
	}
}

// shownCounts are the parts and bytes done each progress line shows, in
// order (terminal lines, or plain ones).
func shownCounts(t *testing.T, out string) (parts []int, bytes []string) {
	t.Helper()
	// terminal: "] 3/10 parts  30.00 MiB / …", plain: "building: parts 3/10, 30.00 MiB of …"
	re := regexp.MustCompile(`(?:(\d+)/\d+ (?:parts|jobs)  |(?:parts|jobs) (\d+)/\d+, )([\d.]+ \w+) (?:of|/) `)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1] + m[2])
		parts, bytes = append(parts, n), append(bytes, m[3])
	}
	return parts, bytes
}

// Reports arrive out of order (batches finish at once and report after
// their counters moved; a retried batch reports late): what is shown never
// goes backwards.
func TestProgressNeverGoesBackwards(t *testing.T) {
	building := func(parts int, bytes int64) create.Progress {
		return create.Progress{Phase: create.PhaseBuilding, Parts: 10, PartsDone: parts, Bytes: 100 << 20, BytesDone: bytes << 20}
	}
	for _, terminal := range []bool{true, false} {
		var buf bytes.Buffer
		p := newProgress(&buf, terminal)
		p.every = 0
		for _, pr := range []create.Progress{building(0, 0), building(3, 30), building(6, 60), building(5, 50), building(4, 40), building(7, 70)} {
			p.update(pr)
		}
		p.finish(nil)
		parts, sizes := shownCounts(t, buf.String())
		if len(parts) < 5 {
			t.Fatalf("terminal %v: %d progress lines, want every update drawn:\n%q", terminal, len(parts), buf.String())
		}
		for i := 1; i < len(parts); i++ {
			if parts[i] < parts[i-1] {
				t.Errorf("terminal %v: parts shown %v: %d after %d (sizes %v)", terminal, parts, parts[i], parts[i-1], sizes)
				break
			}
		}
	}
}

// A run that succeeds ends at 100 % however few updates got drawn (they
// are drawn a few times a second at most); one that fails says which phase
// failed, and how far it had got.
func TestProgressEnds(t *testing.T) {
	extracting := func(done int, bytes int64) extract.Progress {
		return extract.Progress{Jobs: 4, JobsDone: done, Bytes: 40 << 20, BytesDone: bytes << 20}
	}
	for _, tc := range []struct {
		name     string
		terminal bool
		err      error
		want     string
	}{
		{"success-terminal", true, nil, "4/4 jobs  40.00 MiB / 40.00 MiB"},
		{"success-plain", false, nil, "jobs 4/4, 40.00 MiB of 40.00 MiB"},
		{"failure-terminal", true, errors.New("entry \"x\": S3 said no"), "extracting failed at 2/4 jobs, 20.00 MiB of 40.00 MiB"},
		{"failure-plain", false, errors.New("entry \"x\": S3 said no"), "extracting failed at 2/4 jobs, 20.00 MiB of 40.00 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newProgress(&buf, tc.terminal)
			p.every = time.Hour // only the first update is drawn on its own
			for i := range 4 {
				if tc.err != nil && i == 3 {
					break
				}
				p.updateExtract(extracting(i, int64(i)*10))
			}
			if tc.err == nil {
				p.updateExtract(extracting(4, 40))
			}
			p.finish(tc.err)
			out := strings.TrimRight(buf.String(), "\n")
			last := out[strings.LastIndexAny(out, "\r\n")+1:]
			if !strings.Contains(last, tc.want) {
				t.Errorf("last line %q, want it to say %q; all:\n%q", last, tc.want, out)
			}
		})
	}
}

// Before its first job, extract says once what S3's write rate allows the
// plan's writes under one prefix, when that is a second or more.
func TestExtractSaysWhatS3sRateAllows(t *testing.T) {
	for _, tc := range []struct {
		name     string
		progress []extract.Progress
		want     string // "" : no line
	}{
		{"bound", []extract.Progress{{Jobs: 40, Writes: 1_000_000, WriteSeconds: 1_000_000.0 / 3500}, {Jobs: 40, JobsDone: 10, Writes: 1_000_000, WriteSeconds: 1_000_000.0 / 3500}},
			"S3's rate   1000000 writes (PUT, COPY, POST) under one prefix: at least 286 s at the 3500 a second S3 serves a prefix"},
		{"not-bound", []extract.Progress{{Jobs: 4, Writes: 2000, WriteSeconds: 2000.0 / 3500}}, ""},
		{"no-rate", []extract.Progress{{Jobs: 4, Writes: 2000}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newProgress(&buf, false)
			for _, pr := range tc.progress {
				p.updateExtract(pr)
			}
			out := buf.String()
			if n := strings.Count(out, "S3's rate"); tc.want == "" && n != 0 || tc.want != "" && (n != 1 || !strings.Contains(out, tc.want)) {
				t.Errorf("output:\n%s\nwant the line %q once (none when empty)", out, tc.want)
			}
		})
	}
}

// The summary says which entries were read rather than copied, truthfully
// for an archive too small to copy ranges of and for --small-stored 0.
func TestExtractSummarySaysWhatWasRead(t *testing.T) {
	for _, c := range []struct {
		plan extract.Plan
		want string
	}{
		{extract.Plan{ReadAll: true, ReadBelow: 0}, "every STORED entry copied, DEFLATE entries read; but S3 copies no range of an archive under 5 MiB, so every entry was read"},
		{extract.Plan{ReadAll: true, ReadBelow: 3 << 20}, "STORED entries under 3.00 MiB read, the rest copied; but S3 copies no range of an archive under 5 MiB, so every entry was read"},
		{extract.Plan{ReadBelow: 0}, "every STORED entry copied, DEFLATE entries read"},
		{extract.Plan{ReadBelow: 3 << 20}, "STORED entries under 3.00 MiB read, the rest copied"},
	} {
		if got := readRule(&c.plan); got != c.want {
			t.Errorf("%+v: %q, want %q", c.plan, got, c.want)
		}
	}
}

// A compressed run plans, reads, plans again: its progress says planning
// once as the first planning and then as what the later ones do, counts
// the read pass's jobs as jobs and says no bytes when the pass reads none
// (only CRC-32 lookups).
func TestProgressOfAReadPass(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false)
	p.every = 0
	for _, pr := range []create.Progress{
		{Phase: create.PhasePlanning},
		{Phase: create.PhaseReading, Parts: 3},
		{Phase: create.PhaseReading, Parts: 3, PartsDone: 3},
		{Phase: create.PhasePlanning},
		{Phase: create.PhaseBuilding, Parts: 2, Bytes: 10 << 20},
		{Phase: create.PhaseDone, Parts: 2, PartsDone: 2, Bytes: 10 << 20, BytesDone: 10 << 20},
	} {
		p.update(pr)
	}
	out := buf.String()
	for _, want := range []string{"planning: listing sources, learning CRC-32s\n", "reading: jobs 3/3\n", "planning: laying out what the read pass learnt\n", "building 2 parts, 10.00 MiB\n"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("progress says %q %d times, want once:\n%s", want, strings.Count(out, want), out)
		}
	}
	if strings.Contains(out, "0 B of 0 B") || strings.Contains(out, "reading: parts") {
		t.Errorf("progress counts the read pass as parts or bytes it does not read:\n%s", out)
	}
}
