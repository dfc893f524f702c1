package load_test

// Extract at millions: each extract handler's memory and time per
// million entries, against an archive written by Go's archive/zip and served
// from a file by the in-memory S3.

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/stepfn"
)

const zipBucket, zipKey = "zips", "big.zip"

// measuredBatchEvery: one worker batch in this many is measured.
const measuredBatchEvery = 25

// archiveS3 is the in-memory S3 with one archive more: s3://zips/big.zip,
// read from a file as a server sends it (not held in the heap measured).
type archiveS3 struct {
	*syntheticS3
	path string
	size int64
}

const archiveETag = `"archive"`

func (s *archiveS3) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if aws.ToString(in.Bucket) != zipBucket {
		return s.syntheticS3.HeadObject(ctx, in, o...)
	}
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(s.size), ETag: aws.String(archiveETag), LastModified: aws.Time(epoch)}, nil
}

func (s *archiveS3) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if aws.ToString(in.Bucket) != zipBucket {
		return s.syntheticS3.GetObject(ctx, in, o...)
	}
	if m := aws.ToString(in.IfMatch); m != "" && m != archiveETag {
		return nil, fmt.Errorf("fake: If-Match %s, the archive's ETag is %s", m, archiveETag)
	}
	from, to := int64(0), s.size-1
	if r := aws.ToString(in.Range); r != "" {
		if n, _ := fmt.Sscanf(r, "bytes=%d-%d", &from, &to); n == 0 {
			if _, err := fmt.Sscanf(r, "bytes=-%d", &from); err != nil {
				return nil, fmt.Errorf("fake: bad range %q", r)
			}
			from, to = max(0, s.size-from), s.size-1
		}
		to = min(to, s.size-1)
		if from > to {
			return nil, fmt.Errorf("fake: bad range %q of %d bytes", r, s.size)
		}
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	body := io.NewSectionReader(f, from, to+1-from)
	return &s3.GetObjectOutput{Body: readCloser{body, f}, ContentLength: aws.Int64(body.Size()), ETag: aws.String(archiveETag),
		ContentRange: aws.String(fmt.Sprintf("bytes %d-%d/%d", from, to, s.size))}, nil
}

// newArchiveS3 is the in-memory S3 serving an archive of n entries
// (writeExtractArchive) from a file of the test's.
func newArchiveS3(t *testing.T, n int) *archiveS3 {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "big.zip")
	t0 := time.Now()
	size := writeExtractArchive(t, path, n)
	t.Logf("archive/zip wrote %d entries, %d bytes, in %s", n, size, time.Since(t0).Round(time.Second))
	return &archiveS3{syntheticS3: newSyntheticS3(0, dir), path: path, size: size}
}

// writeExtractArchive writes n entries with Go's archive/zip: names in
// folders of a thousand, 0 to 63 bytes each, every fourth DEFLATEd.
func writeExtractArchive(t *testing.T, path string, n int) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	zw := zip.NewWriter(bw)
	body := make([]byte, 64)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	for i := range n {
		method := zip.Store
		if i%4 == 0 {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("d%04d/f%07d.txt", i/1000, i), Method: method, Modified: epoch})
		if err == nil {
			_, err = w.Write(body[:i%64])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func extractRequest(prefix string) []byte {
	doc, _ := json.Marshal(map[string]any{
		"archive":     map[string]any{"bucket": zipBucket, "key": zipKey},
		"destination": map[string]any{"bucket": dstBucket, "prefix": prefix},
	})
	return doc
}

// TestLoadExtractPerMillion extracts an archive of 1 M entries
// (S3ZIP_EXTRACT_COUNTS: others, comma-separated) handler by handler, as
// the state machine runs them, and prints each one's peak memory and time,
// in all and per million; it fails when one would not fit its Lambda
// (infra/lib/extract-workflow.ts).
func TestLoadExtractPerMillion(t *testing.T) {
	long(t)
	for _, n := range countsFrom(t, "S3ZIP_EXTRACT_COUNTS", []int{1_000_000}) {
		c := newArchiveS3(t, n)
		ms := runExtract(t, c, n, fmt.Sprintf("extract-%d", n))
		per := float64(n) / 1e6
		for _, m := range ms {
			t.Logf("extract %s, %d entries: %.1f s (%.1f s a million), peak %.0f MiB (own %.0f MiB, %.0f MiB a million; process HWM %.0f MiB)",
				m.handler, n, m.wall.Seconds(), m.wall.Seconds()/per, float64(m.estimate())/mib, float64(m.own())/mib, float64(m.own())/mib/per, float64(m.hwm)/mib)
		}
		reportFor(t, fmt.Sprintf("%d entries extracted", n), ms, extractLambdaMemory(t))
	}
}

// runExtract runs the extract handlers as the state machine does, each
// measured: the planner, the batches (the worst reported), the finalizer.
func runExtract(t *testing.T, c *archiveS3, n int, execution string) []measurement {
	t.Helper()
	ctx := context.Background()
	cfg := extract.Config{WorkBucket: workBucket}.Defaults()
	var ex *extract.Extraction
	planner, err := measure("extract-planner", func() (err error) {
		ex, err = (&extract.Planner{S3: c, Config: cfg, Log: quiet}).Handle(ctx, extract.PlanInput{Request: extractRequest("x/"), Execution: execution})
		return err
	})
	if err != nil {
		t.Fatalf("planner: %v", err)
	}
	if ex.Objects != n {
		t.Fatalf("planned %d objects, want %d", ex.Objects, n)
	}
	jobs := readExtractJobs(t, c, ex)
	var children []stepfn.ChildResult
	worst := measurement{handler: "extract-worker"}
	for b, i := 0, 0; i < len(jobs); b, i = b+1, i+ex.BatchSize {
		var in extract.BatchInput
		in.Items, in.BatchInput.Job = jobs[i:min(i+ex.BatchSize, len(jobs))], *ex
		var out *extract.BatchOutput
		batch := func() (err error) {
			out, err = (&extract.Worker{S3: c, Config: cfg, Log: quiet}).Handle(ctx, in)
			return err
		}
		// Every batch runs the same jobs' worth (ex.BatchSize): a sample
		// of them is measured, each measurement a full collection first.
		if b%measuredBatchEvery != 0 {
			if err := batch(); err != nil {
				t.Fatalf("worker, batch at job %d: %v", i, err)
			}
		} else if m, err := measure("extract-worker", batch); err != nil {
			t.Fatalf("worker, batch at job %d: %v", i, err)
		} else if m.own() >= worst.own() {
			worst = m
		}
		doc, _ := json.Marshal(out)
		children = append(children, stepfn.ChildResult{Status: "SUCCEEDED", Output: string(doc)})
	}
	in := extract.FinalizeInput{Extraction: *ex}
	d, err := stepfn.WriteResults[stepfn.ChildResult](ctx, stepfn.Put(c), stepfn.ResultLocation{Bucket: ex.WorkBucket, Prefix: ex.WorkPrefix + "map/", MapRunArn: "load"}, children, nil)
	if err != nil {
		t.Fatal(err)
	}
	children = nil
	in.Results = &stepfn.MapResults{MapRunArn: "load", ResultWriterDetails: d}
	var sum *extract.Summary
	finalizer, err := measure("extract-finalizer", func() (err error) {
		sum, err = (&extract.Finalizer{S3: c, Config: cfg, Log: quiet}).Handle(ctx, in)
		return err
	})
	if err != nil {
		t.Fatalf("finalizer: %v", err)
	}
	if sum.Objects != n {
		t.Fatalf("the finalizer reports %d objects, want %d", sum.Objects, n)
	}
	return []measurement{planner, worst, finalizer}
}

// readExtractJobs reads the planned jobs as the Map's ItemReader does.
func readExtractJobs(t *testing.T, c *archiveS3, ex *extract.Extraction) []extract.Job {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &ex.WorkBucket, Key: &ex.JobsKey})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var jobs []extract.Job
	sc := bufio.NewScanner(out.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var j extract.Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatalf("jobs line %d: %v", len(jobs)+1, err)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// extractLambdaMemory reads the extract functions' memory (MB) from their
// construct's defaults.
func extractLambdaMemory(t testing.TB) map[string]int {
	t.Helper()
	src, err := os.ReadFile("../../infra/lib/extract-workflow.ts")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`'(extract-\w+)': \{ memorySize: (?:[\w?.]+ \?\? )?(\w+)`).FindAllStringSubmatch(string(src), -1) {
		value := m[2]
		if c := regexp.MustCompile(`export const ` + value + ` = (\d+);`).FindStringSubmatch(string(src)); c != nil {
			value = c[1] // a constant of the file's
		}
		if out[m[1]], err = strconv.Atoi(value); err != nil {
			t.Fatalf("infra/lib/extract-workflow.ts: %s's memorySize %q is neither a number nor a constant of the file", m[1], m[2])
		}
	}
	if len(out) != 4 {
		t.Fatalf("the extract functions' sizing in infra/lib/extract-workflow.ts: found %v, want four", out)
	}
	return out
}

// TestExtractPlannerAtTenMillion plans an archive of 10 M entries
// (S3ZIP_EXTRACT_PLAN_COUNTS: others, comma-separated) with the extract
// planner alone and prints its peak memory and time; it fails when the
// planner would not fit its Lambda. Not in make test-load (the archive
// alone takes minutes to write): make test-scale-extract-plan.
func TestExtractPlannerAtTenMillion(t *testing.T) {
	long(t)
	for _, n := range countsFrom(t, "S3ZIP_EXTRACT_PLAN_COUNTS", []int{10_000_000}) {
		c := newArchiveS3(t, n)
		cfg := extract.Config{WorkBucket: workBucket}.Defaults()
		var ex *extract.Extraction
		m, err := measure("extract-planner", func() (err error) {
			ex, err = (&extract.Planner{S3: c, Config: cfg, Log: quiet}).Handle(context.Background(), extract.PlanInput{Request: extractRequest("x/"), Execution: fmt.Sprintf("plan-%d", n)})
			return err
		})
		if err != nil {
			t.Fatalf("planner, %d entries: %v", n, err)
		}
		if ex.Objects != n {
			t.Fatalf("planned %d objects, want %d", ex.Objects, n)
		}
		jobs := c.work[ex.JobsKey]
		t.Logf("extract planner, %d entries: %.1f s, peak %.0f MiB (%.0f MiB a million; process HWM %.0f MiB); %d jobs, %d bytes of them",
			n, m.wall.Seconds(), float64(m.estimate())/mib, float64(m.own())/mib/(float64(n)/1e6), float64(m.hwm)/mib, ex.Jobs, jobs)
		reportFor(t, fmt.Sprintf("%d entries planned for extraction", n), []measurement{m}, extractLambdaMemory(t))
	}
}
