package load_test

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const mib = 1 << 20

// usage is one sample of the Go runtime's memory.
type usage struct {
	mapped uint64 // memory the runtime holds from the OS and has not released: what RSS follows
	heap   uint64 // bytes of live and not yet swept heap objects
}

var samples = []metrics.Sample{
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
}

func sample() usage {
	s := make([]metrics.Sample, len(samples))
	copy(s, samples)
	metrics.Read(s)
	return usage{mapped: s[0].Value.Uint64() - s[1].Value.Uint64(), heap: s[2].Value.Uint64()}
}

// floor is the runtime's own memory before the test does anything: what a
// fresh Lambda process holds before its handler runs (binary and runtime).
var floor = sample()

// measurement is one handler invocation's memory and time.
type measurement struct {
	handler string
	base    usage // before, after a full GC
	peak    usage // highest sample while it ran
	hwm     uint64
	hwmOK   bool
	wall    time.Duration
}

// own is the handler's own peak: what it added to the process.
func (m measurement) own() uint64 { return m.peak.mapped - min(m.base.mapped, m.peak.mapped) }

// estimate is what the same invocation needs as a Lambda: a fresh runtime plus its own peak.
func (m measurement) estimate() uint64 { return floor.mapped + m.own() }

// measure runs fn and samples memory every millisecond while it runs.
func measure(handler string, fn func() error) (measurement, error) {
	runtime.GC()
	debug.FreeOSMemory()
	m := measurement{handler: handler, base: sample()}
	resetHWM()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := m.base
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			u := sample()
			mu.Lock()
			peak.mapped, peak.heap = max(peak.mapped, u.mapped), max(peak.heap, u.heap)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	t0 := time.Now()
	err := fn()
	m.wall = time.Since(t0)
	close(stop)
	wg.Wait()
	m.peak = peak
	m.hwm, m.hwmOK = vmHWM()
	return m, err
}

// resetHWM resets the kernel's peak RSS of this process (Linux ≥ 4.0).
func resetHWM() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func vmHWM() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// lambdaMemory reads each function's configured memory (MB) from the CDK construct,
// so the comparison follows the deployment.
func lambdaMemory(t testing.TB) map[string]int {
	t.Helper()
	src, err := os.ReadFile("../../infra/lib/archive-workflow.ts")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(planner|worker|finalizer|abort): \{ memorySize: (\d+)`).FindAllStringSubmatch(string(src), -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(out) != 4 {
		t.Fatalf("DEFAULT_SIZING in infra/lib/archive-workflow.ts: found %v, want the four functions", out)
	}
	return out
}

// report prints the table and fails when an invocation would not fit its
// Lambda (the create workflow's).
func report(t *testing.T, title string, ms []measurement) {
	t.Helper()
	reportFor(t, title, ms, lambdaMemory(t))
}

// reportFor is report with each function's memory (MB) given.
func reportFor(t *testing.T, title string, ms []measurement, mem map[string]int) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s (Go runtime floor %.0f MiB)\n", title, float64(floor.mapped)/mib)
	fmt.Fprintf(&b, "%-22s %9s %10s %10s %10s %10s %10s %8s\n", "handler", "wall", "own-peak", "heap-peak", "estimate", "proc-HWM", "lambda", "use")
	for _, m := range ms {
		fn := strings.SplitN(m.handler, " ", 2)[0]
		limit := uint64(mem[fn]) * mib // Lambda's "MB" are MiB
		hwm := "n/a"
		if m.hwmOK {
			hwm = fmt.Sprintf("%.0fMiB", float64(m.hwm)/mib)
		}
		fmt.Fprintf(&b, "%-22s %9s %8.0fMiB %8.0fMiB %8.0fMiB %10s %8dMB %7.0f%%\n", m.handler, m.wall.Round(time.Millisecond),
			float64(m.own())/mib, float64(m.peak.heap-min(m.base.heap, m.peak.heap))/mib, float64(m.estimate())/mib, hwm, mem[fn],
			100*float64(m.estimate())/float64(limit))
		if m.estimate() > limit {
			t.Errorf("%s: needs about %.0f MiB, the Lambda has %d MB", m.handler, float64(m.estimate())/mib, mem[fn])
		}
	}
	t.Log("\n" + b.String())
}
