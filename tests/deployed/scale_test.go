package deployed_test

// make test-scale: a million small objects archived as deployed. Not part
// of make test: it takes tens of minutes and tens of GB of disk
// (docs/performance.md, "A million objects as deployed").

import (
	"archive/zip"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

const (
	scaleDefaultObjects = 1_000_000
	scaleSeed           = 23
	// Sizes are log-normal around scaleMedianSize, capped at scaleMaxSize.
	scaleMedianSize = 4 << 10
	scaleSigma      = 0.75
	scaleMaxSize    = 1 << 20
	// scalePutConcurrency bounds the seeding PUTs (more only queue at the
	// server on two cores).
	scalePutConcurrency = 32
	scaleKeyPrefix      = sourcePrefix + "s/"
)

// scaleKinds are the checksums the sources are stored with: two thirds
// CRC-32 (what SDKs send by default), a third spread over every other kind
// S3 keeps, none included, whose CRC-32 someone must learn by reading.
var scaleKinds = []s3test.Checksum{s3test.ChecksumNone, s3test.ChecksumCRC32C, s3test.ChecksumSHA1, s3test.ChecksumSHA256, s3test.ChecksumCRC64NVME}

func scaleKind(i int) s3test.Checksum {
	if i%3 != 0 {
		return s3test.ChecksumCRC32
	}
	return scaleKinds[(i/3)%len(scaleKinds)]
}

// scaleSize is object i's size: the same for a seed whatever the order.
func scaleSize(i int) int {
	rng := rand.New(rand.NewPCG(scaleSeed, uint64(i)))
	return min(scaleMaxSize, int(math.Round(scaleMedianSize*math.Exp(scaleSigma*rng.NormFloat64()))))
}

func scaleName(i int) string { return fmt.Sprintf("s/%03d/%07d.bin", i%1000, i) }

func scaleBody(i int) []byte { return s3test.Bytes(scaleSeed<<32|uint64(i), scaleSize(i)) }

// scaleIndex is the i of an entry scaleName(i) names (-1 for any other).
func scaleIndex(name string) int {
	base := strings.TrimSuffix(name[strings.LastIndexByte(name, '/')+1:], ".bin")
	i, err := strconv.Atoi(base)
	if err != nil || scaleName(i) != name {
		return -1
	}
	return i
}

// scaleSource is what the test knows of a source to check its entry by.
type scaleSource struct {
	crc  uint32
	size int32
	sha  [32]byte
}

// envCount reads a count from the environment variable name: def when it
// is unset; "1_000_000" is read as 1000000.
func envCount(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// scaleDiskNeed is the disk the run takes at most: the sources (each file
// rounded up to 4 KiB blocks, plus its metadata), and the archive three
// times — its parts and the completed object while versitygw assembles it,
// and the copy the readers check.
func scaleDiskNeed(sourceBytes int64, n int) int64 {
	const block, perObject = 4 << 10, 4 << 10
	sources := sourceBytes + int64(n)*(block/2+perObject)
	archive := sourceBytes + int64(n)*200 // headers and central directory, generously
	return sources + 3*archive + 1<<30
}

func freeDisk(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// diskUsage is what du says dir takes (blocks, not apparent size).
func diskUsage(dir string) (int64, error) {
	out, err := exec.Command("du", "-sk", dir).Output()
	if err != nil {
		return 0, fmt.Errorf("du -sk %s: %v", dir, err)
	}
	kb, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	return kb << 10, err
}

// TestDeployedScale archives S3ZIP_SCALE_OBJECTS (default 1,000,000) small
// objects through the deployed template — the definition under the local
// engine, each function a bootstrap process — checks the archive with two
// readers and every entry's CRC-32 and size against its source, and fails
// when a function's peak RSS exceeds the memory its template gives it.
func TestDeployedScale(t *testing.T) {
	if os.Getenv("S3ZIP_SCALE") != "1" {
		t.Skip("scale case: run with S3ZIP_SCALE=1 (make test-scale; S3ZIP_SCALE_OBJECTS sets the count)")
	}
	n := envCount(t, "S3ZIP_SCALE_OBJECTS", scaleDefaultObjects)
	var sourceBytes int64
	for i := range n {
		sourceBytes += int64(scaleSize(i))
	}
	need := scaleDiskNeed(sourceBytes, n)
	free, err := freeDisk(os.TempDir())
	if err != nil {
		t.Fatalf("free disk in %s: %v", os.TempDir(), err)
	}
	if free < need {
		t.Fatalf("%d objects (%.1f GiB of sources) need about %.1f GiB of free disk in %s, which has %.1f GiB: free some, point TMPDIR elsewhere or lower S3ZIP_SCALE_OBJECTS",
			n, float64(sourceBytes)/(1<<30), float64(need)/(1<<30), os.TempDir(), float64(free)/(1<<30))
	}
	t.Logf("%d objects, %d bytes of sources; needs about %.1f GiB of disk, %.1f GiB free", n, sourceBytes, float64(need)/(1<<30), float64(free)/(1<<30))

	d := Deploy(t)
	defer d.logsOnFailure()
	d.IAM.summaryOnly = true
	d.ExecutionTimeout = 4 * time.Hour

	sources := make([]scaleSource, n)
	t0 := time.Now()
	err = d.S3.PutEach(t.Context(), sourceBucket, n, scalePutConcurrency, func(i int) (string, []byte, s3test.Checksum) {
		body := scaleBody(i)
		sources[i] = scaleSource{crc: crc32.ChecksumIEEE(body), size: int32(len(body)), sha: sha256.Sum256(body)}
		return sourcePrefix + scaleName(i), body, scaleKind(i)
	})
	if err != nil {
		t.Fatalf("seeding: %v", err)
	}
	seed := time.Since(t0)
	seeded, err := diskUsage(d.S3.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d objects (%d bytes, %.1f GiB on disk) in %s: %.0f PUTs/s, %.1f MiB/s, %d at a time",
		n, sourceBytes, float64(seeded)/(1<<30), seed.Round(time.Second), float64(n)/seed.Seconds(), float64(sourceBytes)/seed.Seconds()/(1<<20), scalePutConcurrency)

	key := destinationPrefix + "scale.zip"
	_, before := d.Faults.Injected()
	slowBefore := slowDowns(d.Faults)
	t0 = time.Now()
	out := d.Execute("scale-1", map[string]any{
		"source":      map[string]any{"bucket": sourceBucket, "prefix": sourcePrefix},
		"destination": map[string]any{"bucket": destinationBucket, "key": key},
	})
	wall := time.Since(t0)
	_, after := d.Faults.Injected()
	requests := after - before
	throttled := slowDowns(d.Faults) - slowBefore

	// Peak memory against the template's, whatever the outcome.
	line := peakMemory(t, d, map[string]*LambdaFunction{"planner": d.Functions["planner"], "finalizer": d.Functions["finalizer"], "worker": d.Functions["worker"]})
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s after %s: %s: %.2000s", out.Status, wall.Round(time.Second), out.Error, out.Cause)
	}
	done, err := diskUsage(d.S3.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for op, c := range d.Faults.Counts() {
		ops = append(ops, fmt.Sprintf("%s %d", op, c.Requests))
	}
	sort.Strings(ops)
	t.Logf("run: %s; server data %.1f GiB on disk after it; S3 requests (the seeding's not counted): %s", wall.Round(time.Second), float64(done)/(1<<30), strings.Join(ops, ", "))

	path := filepath.Join(t.TempDir(), "scale.zip")
	size := d.S3.DownloadFile(t, destinationBucket, key, path)
	entries := scaleCheckEntries(t, path, sources)
	want := make([]zipcheck.Want, n)
	for i, s := range sources {
		want[i] = zipcheck.Want{Name: scaleName(i), Size: int64(s.size), SHA256: s.sha}
	}
	for _, reader := range []string{zipcheck.ReaderGo, zipcheck.ReaderUnzip} {
		t0 := time.Now()
		zipcheck.CheckWith(t, reader, path, want)
		t.Logf("%s: every entry's content as its source's (%s)", reader, time.Since(t0).Round(time.Second))
	}
	d.assertClean()
	fmt.Printf("scale: %d entries, %d bytes, %.0f s; %s; requests %d, throttled %d\n", entries, size, wall.Seconds(), line, requests, throttled)
}

// peakMemory checks the peak RSS of the planner, finalizer and worker (fns,
// by those names) against their template's memory, logs what each ran, and
// says them as the scale lines do: "planner P MiB of M, finalizer F MiB of
// M, worker peak R MiB of M".
func peakMemory(t *testing.T, d *Deployment, fns map[string]*LambdaFunction) string {
	t.Helper()
	var parts []string
	for _, name := range []string{"planner", "finalizer", "worker"} {
		f := fns[name]
		peak, procs, err := d.Lambdas.PeakRSS(f)
		if err != nil {
			t.Error(err)
		}
		label := name
		if name == "worker" {
			label = "worker peak"
		}
		parts = append(parts, fmt.Sprintf("%s %.0f MiB of %d", label, float64(peak)/mib, f.MemoryMB))
		invocations, _, timeouts := f.Stats()
		f.mu.Lock()
		longest := f.Longest
		f.mu.Unlock()
		t.Logf("%s (%s): %d invocations in %d processes, %d timed out; the longest %s of its %d s; peak RSS %.0f MiB of %d MB",
			name, f.ID, invocations, procs, timeouts, longest.Round(100*time.Millisecond), f.TimeoutSeconds, float64(peak)/mib, f.MemoryMB)
		if limit := uint64(f.MemoryMB) * mib; peak > limit {
			t.Errorf("%s (%s): peak RSS %.0f MiB (largest of %d processes) exceeds its %d MB", name, f.ID, float64(peak)/mib, procs, f.MemoryMB)
		}
	}
	return strings.Join(parts, ", ")
}

// slowDowns is how many requests the S3 side answered 503 SlowDown so far,
// past its rates (S3ZIP_RATE_FACTOR) or as an injected fault.
func slowDowns(p *faultproxy.Proxy) int {
	n := 0
	for _, c := range p.Counts() {
		n += c.Injected[faultproxy.SlowDown]
	}
	return n
}

// scaleCheckEntries compares the central directory's CRC-32 and size of
// every entry with its source's; it returns the number of entries.
func scaleCheckEntries(t *testing.T, path string, sources []scaleSource) int {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	defer zr.Close()
	seen := make([]bool, len(sources))
	bad := 0
	complain := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, f := range zr.File {
		i := scaleIndex(f.Name)
		switch {
		case i < 0 || i >= len(sources):
			complain("entry %q: no such source", f.Name)
		case seen[i]:
			complain("entry %q: listed twice", f.Name)
		case f.CRC32 != sources[i].crc || f.UncompressedSize64 != uint64(sources[i].size):
			seen[i] = true
			complain("entry %q: CRC-32 %08x, %d bytes; the source's %08x, %d bytes", f.Name, f.CRC32, f.UncompressedSize64, sources[i].crc, sources[i].size)
		default:
			seen[i] = true
		}
	}
	for i, ok := range seen {
		if !ok {
			complain("entry %q: missing", scaleName(i))
		}
	}
	if bad > 10 {
		t.Errorf("… %d problems in all", bad)
	}
	return len(zr.File)
}
