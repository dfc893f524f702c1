package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// sourceReads records the requests a client makes of one bucket's objects
// (HeadObject, GetObject, UploadPartCopy from it): what the planner must
// leave to the read pass.
type sourceReads struct {
	*s3.Client
	bucket string
	mu     sync.Mutex
	calls  []string
}

func (c *sourceReads) note(op, bucket, key string) {
	if bucket != c.bucket {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, op+" "+key)
}

func (c *sourceReads) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	c.note("HeadObject", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return c.Client.HeadObject(ctx, in, o...)
}

func (c *sourceReads) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.note("GetObject", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return c.Client.GetObject(ctx, in, o...)
}

func (c *sourceReads) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, o ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	src := strings.TrimPrefix(aws.ToString(in.CopySource), "/")
	bucket, key, _ := strings.Cut(src, "/")
	c.note("UploadPartCopy", bucket, key)
	return c.Client.UploadPartCopy(ctx, in, o...)
}

// planAsDeployed runs the planner's states as the state machine does, with
// the planner on its own client: PlanArchive, then ReadEntries (the Runner's
// Map, on the runner's client) and PlanLayout for as long as the planner
// returns a read plan. It returns the job and the planner's invocations.
func planAsDeployed(t *testing.T, pl *Planner, r *Runner, in PlanInput) (*Job, int) {
	t.Helper()
	ctx := context.Background()
	cfg := r.Config.Defaults()
	for calls := 1; ; calls++ {
		job, rp, err := pl.Start(ctx, in)
		if err != nil {
			t.Fatalf("planner invocation %d: %v", calls, err)
		}
		if rp == nil {
			return job, calls
		}
		if calls > 4 {
			t.Fatalf("the planner asked for a read round %d times", calls)
		}
		results, err := r.readPass(ctx, cfg, quietLog(), rp)
		if err != nil {
			t.Fatalf("ReadEntries after planner invocation %d: %v", calls, err)
		}
		reads := rp.Reads
		reads.Results = results
		in.Reads = &reads
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// plannedEntries reads the entries a job's plan placed.
func plannedEntries(t *testing.T, e *env, job *Job) []plan.PlacedEntry {
	t.Helper()
	entries, err := plan.DecodeEntries(bytes.NewReader(e.srv.GetObject(t, "work", job.EntriesKey)))
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// The planner's own requests grow with listing pages and parts, never with
// objects: a manifest's objects are looked up (pinned, sized, their CRC-32s
// learned) by the read pass's Map, not by a HEAD each from the planner. The
// planner handler is counted alone, for 1,000 and for 10,000 objects; what
// may grow between them is a page (a result file, a part) per thousand
// objects, not a request per object (the planner before made 9,000 HEADs
// more).
func TestPlannerRequestsGrowWithPagesNotManifestObjects(t *testing.T) {
	const few, many = 1000, 10000
	e := newEnv(t, nil)
	objects := s3test.NumberedObjects("m/", many, 16)
	keys := make([]string, 0, many)
	stored, unstored := map[string][]byte{}, map[string][]byte{}
	for k, body := range objects {
		keys = append(keys, k)
		// A third stores a CRC-32 (the lookup's HeadObject answers it), the
		// rest none (the workers compute theirs as they stream them).
		if len(keys)%3 == 0 {
			stored[k] = body
		} else {
			unstored[k] = body
		}
	}
	sort.Strings(keys)
	e.srv.PutObjects(t, "src", stored, s3test.WithChecksum(s3test.ChecksumCRC32))
	e.srv.PutObjects(t, "src", unstored)
	r := e.runner()
	r.Config.DefaultMaxConcurrency = 8
	requests := map[int]int64{}
	for _, n := range []int{few, many} {
		list := "key\n" + strings.Join(keys[:n], "\n") + "\n"
		e.srv.PutObject(t, "src", fmt.Sprintf("lists/%d.csv", n), []byte(list))
		counter := s3metrics.New()
		pl := &Planner{S3: s3.New(e.s3.Options(), counter.Option()), Config: r.Config, Log: quietLog()}
		req := fmt.Sprintf(`{"source":{"bucket":"src","manifest":{"bucket":"src","key":"lists/%d.csv"}},"destination":{"bucket":"dst","key":"out/%d.zip"},"options":{"strategy":"stream"}}`, n, n)
		job, calls := planAsDeployed(t, pl, r, PlanInput{Request: []byte(req), Execution: fmt.Sprintf("count-%d", n)})
		requests[n] = counter.Total()
		t.Logf("%d manifest objects: %d planner invocations, %d planner requests %v", n, calls, requests[n], counter.Sorted())
		entries := plannedEntries(t, e, job)
		if len(entries) != n {
			t.Fatalf("%d entries planned, want %d", len(entries), n)
		}
		for _, pe := range entries {
			body := objects[pe.Source.Key]
			if pe.Size != int64(len(body)) || pe.Source.ETag == "" || pe.ModTime.IsZero() {
				t.Fatalf("entry %q: size %d etag %q modTime %v: not pinned as its object is (%d bytes)", pe.Name, pe.Size, pe.Source.ETag, pe.ModTime, len(body))
			}
			if _, ok := stored[pe.Source.Key]; ok && !pe.CRC32.Known {
				t.Fatalf("entry %q: S3 stores its CRC-32, the plan does not know it", pe.Name)
			}
		}
	}
	if grew, pages := requests[many]-requests[few], int64(many-few)/1000; grew > pages {
		t.Errorf("the planner made %d requests for %d manifest objects and %d for %d: %d more, over a page per thousand objects (%d)",
			requests[few], few, requests[many], many, grew, pages)
	}
}

// The CRC-32s a layout needs before its workers run (an entry whose header
// one part writes and whose data another part holds) are learned by the
// read pass, not by the planner: listing said which objects store one (a
// HeadObject answers it) and which store none (S3 computes it for a copy
// into a probe upload, with no HeadObject first). The planner reads no
// source object, the archive is valid, and nothing is left.
func TestCRCsTheLayoutNeedsAreLearnedByTheReadPass(t *testing.T) {
	var objects []object
	for i := range 5 {
		checksum := s3test.ChecksumNone
		if i%4 == 1 {
			checksum = s3test.ChecksumCRC32
		}
		// 3 MiB each against 5 MiB parts: the headers of 1.bin (a stored
		// CRC-32) and 3.bin (none) are in one part, their data in two.
		objects = append(objects, object{key: fmt.Sprintf("in/%d.bin", i), size: 3*mib + i, checksum: checksum})
	}
	e := newEnv(t, objects)
	r := e.runner()
	planner := &sourceReads{Client: e.s3, bucket: "src"}
	readers := &sourceReads{Client: e.s3, bucket: "src"}
	r.S3 = readers
	pl := &Planner{S3: planner, Config: r.Config, Log: quietLog()}
	job, calls := planAsDeployed(t, pl, r, PlanInput{Request: request("stream", "in/", "out/a.zip", `,"partSize":5242880`), Execution: "exec-crcs"})
	if calls != 2 {
		t.Errorf("planner invoked %d times, want 2 (PlanArchive with the CRC round, PlanLayout)", calls)
	}
	// The plan read back after the round runs as it was fitted: a Map of
	// MaxConcurrency 0 built its parts one at a time.
	if job.MaxConcurrency < 1 || job.PartsPerBatch < 1 || job.PartsInFlight < 1 {
		t.Errorf("job after the CRC round: MaxConcurrency %d, PartsPerBatch %d, PartsInFlight %d; want the plan's fit", job.MaxConcurrency, job.PartsPerBatch, job.PartsInFlight)
	}
	if len(planner.calls) > 0 {
		t.Errorf("the planner read source objects: %q", planner.calls)
	}
	var heads, probes int
	for _, c := range readers.calls {
		switch {
		case strings.HasPrefix(c, "HeadObject"):
			heads++
		case strings.HasPrefix(c, "UploadPartCopy"):
			probes++
		}
	}
	if heads == 0 || probes == 0 {
		t.Errorf("the read pass made %d HeadObjects and %d probe copies (%q); want both: a HEAD for a stored CRC-32, a probe for none", heads, probes, readers.calls)
	}
	for _, c := range readers.calls {
		for _, o := range objects {
			if c == "HeadObject "+o.key && o.checksum == s3test.ChecksumNone {
				t.Errorf("%s: the listing said it stores no CRC-32, yet the read pass asked", c)
			}
		}
	}
	if _, f := r.build(context.Background(), r.Config.Defaults(), quietLog(), job, nil); f != nil {
		t.Fatal(f.err)
	}
	e.checkArchive(t, "out/a.zip", "in/")
	e.assertClean(t)
}

// Pinning stays what it was when the planner looked a manifest's objects up
// itself: an object changed after the pin round — before the CRC round asks
// for its CRC-32, or before a worker copies it — fails the run with
// failure.SourceChangedError (If-Match on the pinned ETag), never archives other
// bytes, and leaves nothing behind.
func TestManifestSourceChangedAfterThePin(t *testing.T) {
	for _, when := range []string{"before-the-crc-round", "before-the-build"} {
		t.Run(when, func(t *testing.T) {
			var objects []object
			var list strings.Builder
			list.WriteString("key\n")
			for i := range 5 {
				objects = append(objects, object{key: fmt.Sprintf("in/%d.bin", i), size: 3*mib + i})
				fmt.Fprintf(&list, "in/%d.bin\n", i)
			}
			e := newEnv(t, objects)
			e.srv.PutObject(t, "src", "lists/m.csv", []byte(list.String()))
			r := e.runner()
			var once sync.Once
			changed := false
			change := func() { // batches run at once: the first changes the sources, the others wait for it
				once.Do(func() {
					for _, o := range objects {
						e.srv.PutObject(t, "src", o.key, make([]byte, o.size))
					}
					changed = true
				})
			}
			reader := &Reader{S3: e.s3}
			r.Read = func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
				if when == "before-the-crc-round" && in.Items[0].Lookup == LookupCRC {
					change()
				}
				return reader.Handle(ctx, in)
			}
			w := &Worker{S3: e.s3, Config: r.Config}
			r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
				if when == "before-the-build" {
					change()
				}
				return w.Handle(ctx, in)
			}
			req := `{"source":{"bucket":"src","manifest":{"bucket":"src","key":"lists/m.csv"}},"destination":{"bucket":"dst","key":"out/a.zip"},"options":{"strategy":"stream","partSize":5242880}}`
			_, err := r.Run(context.Background(), []byte(req), "exec-"+when)
			var sce *failure.SourceChangedError
			if !errors.As(err, &sce) {
				t.Fatalf("err = %v, want SourceChangedError", err)
			}
			if !changed {
				t.Fatalf("the run ended before the sources were changed")
			}
			e.assertClean(t)
			if _, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/a.zip")}); err == nil {
				t.Error("an archive was left at the destination")
			}
		})
	}
}

// What a listing's checksum algorithms and type say of an object's CRC-32,
// and what is noted of it, in key order or not (an inventory's).
func TestStoredCRCs(t *testing.T) {
	crc32, sha, crc64 := types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmCrc64nvme
	for _, tc := range []struct {
		name       string
		algorithms []types.ChecksumAlgorithm
		typ        types.ChecksumType
		want       string
	}{
		{"says-nothing", nil, "", ""},
		{"crc32-whole-object", []types.ChecksumAlgorithm{crc32}, types.ChecksumTypeFullObject, ""},
		{"crc32-type-not-given", []types.ChecksumAlgorithm{crc32}, "", ""},
		{"crc32-of-parts", []types.ChecksumAlgorithm{crc32}, types.ChecksumTypeComposite, StoredComposite},
		{"another-algorithm", []types.ChecksumAlgorithm{sha}, types.ChecksumTypeFullObject, StoredNone},
		{"crc64nvme-only", []types.ChecksumAlgorithm{crc64}, types.ChecksumTypeFullObject, StoredNone},
	} {
		if got := storedKind(tc.algorithms, tc.typ); got != tc.want {
			t.Errorf("%s: storedKind = %q, want %q", tc.name, got, tc.want)
		}
	}
	var s storedCRCs
	for _, n := range []struct{ bucket, key, kind string }{
		{"b", "z", StoredNone}, {"b", "a", StoredNone}, {"b", "m", StoredComposite}, {"b", "k", ""}, {"c", "a", StoredComposite},
	} {
		s.note(n.bucket, n.key, n.kind)
	}
	for src, want := range map[plan.Source]string{
		{Bucket: "b", Key: "a"}: StoredNone, {Bucket: "b", Key: "z"}: StoredNone, {Bucket: "b", Key: "m"}: StoredComposite,
		{Bucket: "b", Key: "k"}: "", {Bucket: "c", Key: "a"}: StoredComposite, {Bucket: "c", Key: "z"}: "", {Bucket: "d", Key: "a"}: "",
	} {
		if got := s.of(src); got != want {
			t.Errorf("of(%s/%s) = %q, want %q", src.Bucket, src.Key, got, want)
		}
	}
	if got := (*storedCRCs)(nil).of(plan.Source{Bucket: "b", Key: "a"}); got != "" {
		t.Errorf("nothing noted: %q", got)
	}
}
