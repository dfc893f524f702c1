package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/s3zip/s3zip/create"
)

// progressPrinter shows a run's phases and parts. On a terminal it draws a
// live line, and on anything else a line per phase and one every few seconds.
// What it shows never goes backwards within a phase, though batches report
// out of order, and its last line, from finish, says how the run ended.
type progressPrinter struct {
	w        io.Writer
	terminal bool
	start    time.Time
	every    time.Duration // between plain lines while building
	unit     string        // what Parts counts, "parts" or extract's "jobs"
	rateSaid bool          // extract's line on S3's write rate is printed

	plannedBefore bool // a planning phase was entered before, as compressed runs come back to it

	mu         sync.Mutex
	phase      create.Phase
	phaseStart time.Time
	last       time.Time
	drawn      bool
	stopTick   chan struct{}
	high       create.Progress // the furthest this phase has got
}

func newProgressPrinter(f *os.File) *progressPrinter {
	fi, err := f.Stat()
	return newProgress(f, err == nil && fi.Mode()&os.ModeCharDevice != 0)
}

func newProgress(w io.Writer, terminal bool) *progressPrinter {
	p := &progressPrinter{w: w, terminal: terminal, start: time.Now(), every: 2 * time.Second, unit: "parts"}
	if terminal {
		p.every = 100 * time.Millisecond
	}
	return p
}

func (p *progressPrinter) update(pr create.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if pr.Phase != p.phase {
		p.enter(pr.Phase, now)
	}
	pr.PartsDone, pr.BytesDone = max(pr.PartsDone, p.high.PartsDone), max(pr.BytesDone, p.high.BytesDone)
	p.high = pr
	switch pr.Phase {
	case create.PhasePlanning:
		p.drawPlanning(now)
		return
	case create.PhaseBuilding:
		if pr.PartsDone == 0 && !p.terminal {
			fmt.Fprintf(p.w, "building %s, %s\n", count(pr.Parts, strings.TrimSuffix(p.unit, "s"), p.unit), humanBytes(pr.Bytes))
			p.last = now
			return
		}
	}
	final := pr.Phase == create.PhaseDone || pr.Phase == create.PhaseFinalizing
	if !final && now.Sub(p.last) < p.every {
		return
	}
	p.draw(pr, now)
}

// draw shows pr as the live line on a terminal, and as a plain line elsewhere.
func (p *progressPrinter) draw(pr create.Progress, now time.Time) {
	p.last = now
	elapsed := now.Sub(p.phaseStart).Seconds()
	speed := float64(pr.BytesDone) / max(elapsed, 1e-3)
	eta := ""
	if pr.Phase == create.PhaseBuilding && speed > 0 && pr.BytesDone < pr.Bytes {
		eta = fmt.Sprintf(", ETA %.0f s", float64(pr.Bytes-pr.BytesDone)/speed)
	}
	unit := p.unit
	if pr.Phase == create.PhaseReading {
		unit = "jobs" // the read pass's pieces read and CRC-32s looked up
	}
	if !p.terminal {
		of := ""
		if pr.Bytes > 0 { // a read pass of lookups alone reads no bytes
			of = fmt.Sprintf(", %s of %s", humanBytes(pr.BytesDone), humanBytes(pr.Bytes))
		}
		fmt.Fprintf(p.w, "%s: %s %d/%d%s%s\n", pr.Phase, unit, pr.PartsDone, pr.Parts, of, eta)
		return
	}
	const width = 30
	filled := 0
	if pr.Bytes > 0 {
		filled = min(width, int(float64(width)*float64(pr.BytesDone)/float64(pr.Bytes)))
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s  %s / %s  %s/s%s  %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		pr.PartsDone, pr.Parts, unit, humanBytes(pr.BytesDone), humanBytes(pr.Bytes), humanBytes(int64(speed)), eta, pr.Phase)
	p.drawn = true
}

// enter starts a phase. Planning, which reports nothing until it is done,
// gets a ticking elapsed time on a terminal so the run is seen to be alive.
func (p *progressPrinter) enter(phase create.Phase, now time.Time) {
	if p.stopTick != nil {
		close(p.stopTick)
		p.stopTick = nil
	}
	if p.phase == create.PhasePlanning && !p.terminal {
		fmt.Fprintf(p.w, "planned in %.1f s\n", now.Sub(p.phaseStart).Seconds())
	}
	p.phase, p.phaseStart, p.last, p.high = phase, now, time.Time{}, create.Progress{Phase: phase}
	if phase == create.PhasePlanning && p.terminal {
		stop := make(chan struct{})
		p.stopTick = stop
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					p.mu.Lock()
					if p.stopTick == stop {
						p.drawPlanning(now)
					}
					p.mu.Unlock()
				}
			}
		}()
	}
}

func (p *progressPrinter) drawPlanning(now time.Time) {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[Kplanning: listing sources, learning CRC-32s … %.1f s", now.Sub(p.phaseStart).Seconds())
		p.drawn = true
		return
	}
	if p.last.IsZero() {
		// Planning comes back after each read round. It is named once, then
		// shown as what it does then.
		if p.plannedBefore {
			fmt.Fprintln(p.w, "planning: laying out what the read pass learnt")
		} else {
			fmt.Fprintln(p.w, "planning: listing sources, learning CRC-32s")
		}
		p.plannedBefore = true
		p.last = now
	}
}

// finish ends the display with how the run ended. A run that succeeded shows
// 100 %, as the last update may not have been drawn. One that failed or was
// stopped shows the phase it was in and how far it had got; the error itself
// follows from main.
// finishRun is finish for a run under ctx. A run a signal stopped says
// "stopped", whatever error the stop surfaced as, such as a cancelled
// request or a failed part.
func (p *progressPrinter) finishRun(ctx context.Context, err error) {
	if _, ok := interrupted(ctx); ok && err != nil {
		err = context.Canceled
	}
	p.finish(err)
}

func (p *progressPrinter) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopTick != nil {
		close(p.stopTick)
		p.stopTick = nil
	}
	now := time.Now()
	switch {
	case err == nil && p.high.Parts > 0 && (p.phase != create.PhaseDone || p.high.PartsDone < p.high.Parts):
		pr := p.high
		pr.Phase, pr.PartsDone, pr.BytesDone = create.PhaseDone, pr.Parts, pr.Bytes
		p.enter(create.PhaseDone, now)
		p.draw(pr, now)
	case err != nil && p.phase != "":
		how := "failed"
		if errors.Is(err, context.Canceled) {
			how = "stopped"
		}
		at := fmt.Sprintf("after %.1f s", now.Sub(p.phaseStart).Seconds())
		if pr := p.high; pr.Parts > 0 {
			at = fmt.Sprintf("at %d/%d %s, %s of %s", pr.PartsDone, pr.Parts, p.unit, humanBytes(pr.BytesDone), humanBytes(pr.Bytes))
		}
		if p.terminal {
			fmt.Fprint(p.w, "\r\033[K")
		}
		fmt.Fprintf(p.w, "%s %s %s\n", p.phase, how, at)
		return
	}
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
	}
}
