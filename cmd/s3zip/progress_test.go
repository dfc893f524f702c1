package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/workflow"
)

// A run's progress as the Runner reports it: planning (which says nothing
// until it ends), then parts, then the final part.
var runProgress = []workflow.Progress{
	{Phase: workflow.PhasePlanning},
	{Phase: workflow.PhaseBuilding, Parts: 57, Bytes: 301 << 20},
	{Phase: workflow.PhaseBuilding, Parts: 57, PartsDone: 20, Bytes: 301 << 20, BytesDone: 100 << 20},
	{Phase: workflow.PhaseFinalizing, Parts: 57, PartsDone: 56, Bytes: 301 << 20, BytesDone: 300 << 20},
	{Phase: workflow.PhaseDone, Parts: 57, PartsDone: 57, Bytes: 301 << 20, BytesDone: 301 << 20},
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
			p.done()
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
