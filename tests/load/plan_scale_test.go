package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/plan"
)

// TestLoadPlanPastMillion: the challenge set (5 MiB objects) and the
// small set (~4 KiB logs) at 1.5 M and 3 M entries, where chain and auto
// panicked (a part's bounds overflowed int64), plans or is refused with a
// LimitError naming the limit; a plan made is valid.
func TestLoadPlanPastMillion(t *testing.T) {
	long(t)
	for _, set := range []string{"challenge", "small"} {
		for _, count := range []int{1_500_000, 3_000_000} {
			entries, _ := plan.Synthetic(set, count, 1)
			for _, s := range []plan.Strategy{plan.StrategyChain, plan.StrategyAuto} {
				planOrRefuse(t, fmt.Sprintf("%s-%s-%d", set, s, count), entries, s)
				runtime.GC()
			}
		}
	}
}

// planOrRefuse plans entries with s as the deployment would and wants a
// valid plan or a LimitError.
func planOrRefuse(t *testing.T, name string, entries []plan.Entry, s plan.Strategy) {
	t.Run(name, func(t *testing.T) {
		t0 := time.Now()
		p, err := plan.Make(entries, plan.Options{Strategy: s, Workers: 100, PartsPerBatch: create.DefaultPartsPerBatch})
		var limit *failure.LimitError
		switch {
		case errors.As(err, &limit):
			t.Logf("refused in %s: %v", time.Since(t0).Round(time.Millisecond), err)
		case err != nil:
			t.Fatalf("plan: %v (want a plan or a LimitError)", err)
		default:
			if err := p.Validate(); err != nil {
				t.Fatalf("plan of %d entries is invalid: %v", len(entries), err)
			}
			st := p.Stats()
			t.Logf("planned in %s: %d parts, %d bytes", time.Since(t0).Round(time.Millisecond), st.Parts, st.ArchiveBytes)
		}
	})
}

// TestLoadPlanPerMillion prints what `s3zip plan --synthetic small
// --strategy auto --workers 100` takes at 1 M and 10 M entries (docs/performance.md,
// "Planning at scale"): wall and CPU time, and the process's peak RSS, in
// all and per million. It measures the CLI as a process of its own, so
// nothing of the test's counts. S3ZIP_PLAN_COUNTS overrides the counts
// (comma-separated).
func TestLoadPlanPerMillion(t *testing.T) {
	long(t)
	counts := countsFrom(t, "S3ZIP_PLAN_COUNTS", []int{1_000_000, 10_000_000})
	bin := filepath.Join(t.TempDir(), "s3zip")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/s3zip").CombinedOutput(); err != nil {
		t.Fatalf("build s3zip: %v\n%s", err, out)
	}
	for _, n := range counts {
		cmd := exec.Command(bin, "plan", "--synthetic", "small", "--count", strconv.Itoa(n), "--strategy", "auto", "--workers", "100", "--json")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		out, err := cmd.Output()
		wall := time.Since(t0)
		if err != nil {
			t.Fatalf("plan %d entries: %v\n%s", n, err, stderr.String())
		}
		var sum struct {
			Entries    int     `json:"entries"`
			Parts      int     `json:"parts"`
			PlanMillis float64 `json:"planMillis"`
		}
		if err := json.Unmarshal(out, &sum); err != nil || sum.Entries != n {
			t.Fatalf("plan %d entries: summary %s (%v), want %d entries", n, out, err, n)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		peak := float64(ru.Maxrss<<10) / mib
		m := float64(n) / 1e6
		t.Logf("plan --synthetic small --count %d --strategy auto --workers 100: %d parts; %.1f s wall (%.1f s a million; Make %.1f s), %.1f s CPU (%.1f s a million), peak RSS %.0f MiB (%.0f MiB a million)",
			n, sum.Parts, wall.Seconds(), wall.Seconds()/m, sum.PlanMillis/1000, cpu.Seconds(), cpu.Seconds()/m, peak, peak/m)
	}
}

// TestLoadPlannerPerMillion runs the planner handler alone, as deployed
// (list -> entries -> plan -> entries and part-job files written), against
// the in-memory S3 at 1 M entries (S3ZIP_PLANNER_COUNTS: others,
// comma-separated), and prints its peak memory and time in all and per
// million; like every load case it fails when the planner would not fit
// its Lambda (infra/lib/archive-workflow.ts). Run it with the Lambda's
// memory limit, GOMEMLIMIT at lambdaenv.MemoryShare of it, to see what the
// Lambda sees.
func TestLoadPlannerPerMillion(t *testing.T) {
	long(t)
	counts := countsFrom(t, "S3ZIP_PLANNER_COUNTS", []int{1_000_000})
	for _, n := range counts {
		c := newSyntheticS3(n, t.TempDir())
		cfg := create.Config{WorkBucket: workBucket}.Defaults()
		m, err := measure("planner", func() error {
			_, err := (&create.Planner{S3: c, Config: cfg, Log: quiet}).Plan(context.Background(), create.PlanInput{Request: listRequest(srcBucket, "e/", "out/planner.zip", "auto"), Execution: fmt.Sprintf("planner-%d", n)})
			return err
		})
		if err != nil {
			t.Fatalf("planner, %d entries: %v", n, err)
		}
		per := float64(n) / 1e6
		t.Logf("planner, %d entries listed, auto: %.1f s (%.1f s a million), peak %.0f MiB (%.0f MiB a million; process HWM %.0f MiB)",
			n, m.wall.Seconds(), m.wall.Seconds()/per, float64(m.estimate())/mib, float64(m.estimate())/mib/per, float64(m.hwm)/mib)
		report(t, fmt.Sprintf("%d entries, the planner alone", n), []measurement{m})
	}
}

// finalizerOwnBound is what the finalizer holds besides its 4 bytes an
// entry: a directory part's buffer (plan.DefaultDirectoryPartSize, reused
// part after part), the first final part's, the spools' buffers and the
// collector's slack. Measured: 73 MiB at 1 M, 95 MiB at 3 M (decoding the
// plan whole it held 787 MiB at 1 M).
const finalizerOwnBound = 3 * plan.DefaultDirectoryPartSize

// countsFrom reads entry counts from a comma-separated environment
// variable, or gives def.
func countsFrom(t *testing.T, name string, def []int) []int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var counts []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s %q: %v", name, s, err)
		}
		counts = append(counts, n)
	}
	return counts
}

// TestLoadFinalizerPerMillion runs a whole run of N entries against the
// in-memory S3 at 1 M entries (S3ZIP_FINALIZER_COUNTS: others,
// comma-separated) and prints the finalizer's peak memory and time, in all
// and per million, with what that makes at ten million; it fails when the
// finalizer would not fit its Lambda (DEFAULT_SIZING,
// infra/lib/archive-workflow.ts), or when its own peak is over
// finalizerOwnBound: it streams the plan's entries and holds what grows
// with the parts, not the entries (4 bytes an entry of CRC-32s aside).
func TestLoadFinalizerPerMillion(t *testing.T) {
	long(t)
	counts := countsFrom(t, "S3ZIP_FINALIZER_COUNTS", []int{1_000_000})
	for _, n := range counts {
		c := newSyntheticS3(n, t.TempDir())
		cfg := create.Config{WorkBucket: workBucket}.Defaults()
		ms, fin := run(t, c, cfg, listRequest(srcBucket, "e/", "out/finalizer.zip", "duo"), fmt.Sprintf("finalizer-%d", n))
		if fin.Stats.Entries != n {
			t.Fatalf("archive has %d entries, want %d", fin.Stats.Entries, n)
		}
		for _, m := range ms {
			if m.handler != "finalizer" {
				continue
			}
			per := float64(n) / 1e6
			own := float64(m.own()) / mib
			t.Logf("finalizer, %d entries, duo: %.1f s (%.1f s a million), peak %.0f MiB (own %.0f MiB, %.0f MiB a million: %.0f MiB at 10 M; process HWM %.0f MiB)",
				n, m.wall.Seconds(), m.wall.Seconds()/per, float64(m.estimate())/mib, own, own/per, float64(floor.mapped)/mib+10*own/per, float64(m.hwm)/mib)
			report(t, fmt.Sprintf("%d entries, the finalizer", n), []measurement{m})
			if bound := finalizerOwnBound + 4*uint64(n); m.own() > bound {
				t.Errorf("finalizer, %d entries: own peak %.0f MiB, over the %.0f MiB it holds whatever the entries (a directory part, buffers, 4 bytes an entry): it holds something an entry", n, own, float64(bound)/mib)
			}
		}
	}
}
