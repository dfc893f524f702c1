package deployed_test

// make test-scale-extract: an archive of a million small entries, written
// by Python's zipfile, extracted as deployed. Not part of make test: it
// takes tens of minutes and some GB of disk (docs/performance.md, "A
// million entries extracted as deployed").

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/extract"
)

const (
	extractScaleDefault = 1_000_000
	extractScaleSeed    = 33
	extractScaleKey     = "incoming/scale/million.zip"
	extractScalePrefix  = "extracted/scale/"
	// extractScaleReaders bounds the GETs that check the objects.
	extractScaleReaders = 32
)

// extractScaleTypes is the Content-Type each extension the archive holds
// must be written with (IANA's types; text as UTF-8), the test's own table.
var extractScaleTypes = map[string]string{
	".txt": "text/plain; charset=utf-8", ".json": "application/json", ".bin": "application/octet-stream",
	".csv": "text/csv; charset=utf-8", ".html": "text/html; charset=utf-8", ".png": "image/png",
}

// expectedEntry is what the archive's central directory (Python's) says
// of an entry: the object extracted from it must have these bytes.
type expectedEntry struct {
	crc  uint32
	size int64
	seen atomic.Bool
}

// TestDeployedExtractScale extracts an archive of S3ZIP_SCALE_EXTRACT_ENTRIES
// (default 1,000,000) entries written by Python's zipfile through the
// deployed template's extract state machine, checks every object's bytes
// (CRC-32 and size) and Content-Type against the archive, that nothing is
// left in the work prefix and no upload is open, and fails when a
// function's peak RSS exceeds the memory its template gives it.
func TestDeployedExtractScale(t *testing.T) {
	if os.Getenv("S3ZIP_SCALE_EXTRACT") != "1" {
		t.Skip("scale case: run with S3ZIP_SCALE_EXTRACT=1 (make test-scale-extract; S3ZIP_SCALE_EXTRACT_ENTRIES sets the count)")
	}
	n := envCount(t, "S3ZIP_SCALE_EXTRACT_ENTRIES", extractScaleDefault)
	// The archive (~1.1 KiB an entry), its copy in the server, and the
	// objects (a file of at least a 4 KiB block and its metadata each).
	need := int64(n)*(2*1200+8<<10) + 1<<30
	if free, err := freeDisk(os.TempDir()); err != nil || free < need {
		t.Fatalf("%d entries need about %.1f GiB of free disk in %s, which has %.1f GiB (%v): free some, point TMPDIR elsewhere or lower S3ZIP_SCALE_EXTRACT_ENTRIES",
			n, float64(need)/(1<<30), os.TempDir(), float64(free)/(1<<30), err)
	}
	zipPath := filepath.Join(t.TempDir(), "million.zip")
	t0 := time.Now()
	if out, err := exec.Command("python3", "testdata/zipwriter.py", zipPath, strconv.Itoa(n), strconv.Itoa(extractScaleSeed)).CombinedOutput(); err != nil {
		t.Fatalf("python3 zipwriter.py: %v\n%s", err, out)
	}
	want, archiveBytes := extractScaleWants(t, zipPath, n)
	t.Logf("Python's zipfile wrote %d entries, %d bytes, in %s", n, archiveBytes, time.Since(t0).Round(time.Second))

	d := Deploy(t)
	defer d.logsOnFailure()
	d.IAM.summaryOnly = true
	d.ExecutionTimeout = 4 * time.Hour
	useExtract(d)
	t0 = time.Now()
	putFile(t, d, extractScaleKey, zipPath)
	t.Logf("archive put in %s", time.Since(t0).Round(time.Second))

	_, before := d.Faults.Injected()
	slowBefore := slowDowns(d.Faults)
	t0 = time.Now()
	out := d.Execute("extract-scale-1", map[string]any{
		"archive":     map[string]any{"bucket": sourceBucket, "key": extractScaleKey},
		"destination": map[string]any{"bucket": sourceBucket, "prefix": extractScalePrefix},
	})
	wall := time.Since(t0)
	_, after := d.Faults.Injected()
	requests, throttled := after-before, slowDowns(d.Faults)-slowBefore
	line := peakMemory(t, d, map[string]*LambdaFunction{"planner": extractFunction(d, "ExtractPlanner"),
		"finalizer": extractFunction(d, "ExtractFinalizer"), "worker": extractFunction(d, "ExtractWorker")})
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s after %s: %s: %.2000s", out.Status, wall.Round(time.Second), out.Error, out.Cause)
	}
	t.Logf("execution: %s, %d S3 requests, %d answered SlowDown", wall.Round(time.Second), requests, throttled)

	t0 = time.Now()
	objects := extractScaleCheck(t, d, want)
	t.Logf("checked %d objects' bytes and Content-Type in %s", objects, time.Since(t0).Round(time.Second))
	extractScaleReport(t, d, n)
	for _, l := range d.S3.Leftovers(t, d.Work, sourceBucket) {
		t.Errorf("left behind: %s", l)
	}
	fmt.Printf("extract-scale: %d entries, %d bytes, %.0f s; %s; requests %d\n", objects, archiveBytes, wall.Seconds(), line, requests)
}

// putFile puts the file at path under key in the source bucket, in parts
// of 64 MiB.
func putFile(t *testing.T, d *Deployment, key, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var parts [][]byte
	for off := 0; off < len(data); off += 64 * mib {
		parts = append(parts, data[off:min(len(data), off+64*mib)])
	}
	d.S3.PutMultipartObject(t, sourceBucket, key, parts)
}

// extractScaleWants reads the archive's central directory with Go's
// archive/zip: each entry's CRC-32 and size, by the key it is extracted to.
func extractScaleWants(t *testing.T, zipPath string, n int) (map[string]*expectedEntry, int64) {
	t.Helper()
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	defer zr.Close()
	if len(zr.File) != n {
		t.Fatalf("the archive holds %d entries, want %d", len(zr.File), n)
	}
	want := make(map[string]*expectedEntry, n)
	for _, f := range zr.File {
		want[extractScalePrefix+f.Name] = &expectedEntry{crc: f.CRC32, size: int64(f.UncompressedSize64)}
	}
	st, err := os.Stat(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	return want, st.Size()
}

// extractScaleCheck lists the destination and reads every object: each key
// one of the archive's entries, once, with its bytes and the Content-Type
// of its extension; every entry found. It returns the objects checked.
func extractScaleCheck(t *testing.T, d *Deployment, want map[string]*expectedEntry) int {
	t.Helper()
	ctx := t.Context()
	keys := make(chan string, 1024)
	var mu sync.Mutex
	var problems []string
	complain := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	var checked atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(keys)
		p := s3.NewListObjectsV2Paginator(d.Admin, &s3.ListObjectsV2Input{Bucket: aws.String(sourceBucket), Prefix: aws.String(extractScalePrefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(gctx)
			if err != nil {
				return fmt.Errorf("list the destination: %w", err)
			}
			for _, o := range page.Contents {
				select {
				case keys <- aws.ToString(o.Key):
				case <-gctx.Done():
					return gctx.Err()
				}
			}
		}
		return nil
	})
	for range extractScaleReaders {
		g.Go(func() error {
			for key := range keys {
				if key == extractScalePrefix+extract.ReportName {
					continue
				}
				if err := extractScaleObject(gctx, d, key, want[key], complain); err != nil {
					return err
				}
				checked.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for key, e := range want {
		if !e.seen.Load() {
			complain("%s: not extracted", key)
		}
	}
	for i, p := range problems {
		if i == 10 {
			t.Errorf("… %d problems in all", len(problems))
			break
		}
		t.Error(p)
	}
	return int(checked.Load())
}

// extractScaleObject reads one extracted object and checks it against its
// entry (nil: no entry has its key).
func extractScaleObject(ctx context.Context, d *Deployment, key string, e *expectedEntry, complain func(string, ...any)) error {
	if e == nil {
		complain("%s: no entry of the archive is extracted to this key", key)
		return nil
	}
	if e.seen.Swap(true) {
		complain("%s: listed twice", key)
	}
	out, err := d.Admin.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(sourceBucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	h := crc32.NewIEEE()
	size, err := io.Copy(h, out.Body)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if h.Sum32() != e.crc || size != e.size {
		complain("%s: CRC-32 %08x, %d bytes; the entry's %08x, %d bytes", key, h.Sum32(), size, e.crc, e.size)
	}
	if typ, want := aws.ToString(out.ContentType), extractScaleTypes[path.Ext(key)]; typ != want {
		complain("%s: Content-Type %q, want %q", key, typ, want)
	}
	return nil
}

// extractScaleReport reads the run's report: one object for every entry.
func extractScaleReport(t *testing.T, d *Deployment, n int) {
	t.Helper()
	out, err := d.Admin.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(sourceBucket), Key: aws.String(extractScalePrefix + extract.ReportName)})
	if err != nil {
		t.Fatalf("the report: %v", err)
	}
	defer out.Body.Close()
	var rep struct {
		Objects []struct {
			Key string `json:"key"`
		} `json:"objects"`
	}
	if err := json.NewDecoder(out.Body).Decode(&rep); err != nil {
		t.Fatalf("the report: %v", err)
	}
	if len(rep.Objects) != n {
		t.Errorf("the report lists %d objects, want %d", len(rep.Objects), n)
	}
}
