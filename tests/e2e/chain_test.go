package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// chainPeak runs a chain archive of objects under prefix while sampling the
// work bucket's bytes on the server's disk, and returns the largest sample.
// A run whose work bucket grows past limit is stopped there (before it
// fills the disk) and fails the test.
func (w *world) chainPeak(t *testing.T, prefix, dest string, objects map[string][]byte, limit int64) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	usage := w.srv.SampleUsage("work", 20*time.Millisecond, limit, func(n int64) {
		t.Errorf("the work bucket holds %d bytes, over the bound of %d: round objects are kept; run stopped", n, limit)
		cancel()
	})
	raw, _ := json.Marshal(listRequest("chain", "src", prefix, dest, nil))
	r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 1}}
	started := time.Now()
	res, err := r.Run(ctx, raw, "e2e-"+t.Name())
	peak, samples, serr := usage.Stop()
	if serr != nil {
		t.Fatalf("sampling the work bucket: %v", serr)
	}
	if err != nil {
		t.Fatal(err)
	}
	st := res.Output.Stats
	t.Logf("%d entries, %d chain parts in %d rounds, %.1f s; work bucket peak %d bytes (%.1f MiB, %d samples)",
		st.Entries, st.ChainParts, st.ChainRounds, time.Since(started).Seconds(), peak, float64(peak)/mib, samples)
	if st.ChainRounds < len(objects) {
		t.Fatalf("%d chain rounds for %d objects: the data set no longer makes a long chain", st.ChainRounds, len(objects))
	}
	w.check(t, dest, wants(prefix, objects))
	w.clean(t)
	return peak
}

// tinyObjects are n objects of 0-2 KiB.
func tinyObjects(prefix string, n int, seed uint64) map[string][]byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	objs := map[string][]byte{}
	for i := 0; i < n; i++ {
		objs[fmt.Sprintf("%s%05d", prefix, i)] = body(uint64(i), rng.IntN(2049))
	}
	return objs
}

// roundBound is what a chain may hold in the work bucket at once: the pad,
// and per chain being built the object its next round copies, that round's
// upload, and the consumed objects waiting for their delete, each at most
// two parts long. Whatever the number of rounds.
func roundBound(chains int) int64 {
	return s3test.MinPartSize + int64(chains)*6*2*s3test.MinPartSize + 2*mib // + the plan's files
}

// A chain deletes each round object once the next round has copied it:
// 200 tiny objects before a big one make a chain part of about 400 rounds,
// which used to leave 400 objects of 5 MiB or more in the work bucket.
func TestChainDeletesConsumedRounds(t *testing.T) {
	w := newWorld(t, "src")
	objs := tinyObjects("r/", 200, 1)
	objs["r/zz-big"] = body(99, 6*mib)
	w.put(t, "src", objs)
	w.chainPeak(t, "r/", "out/rounds.zip", objs, roundBound(1))
}

// A chain keeps a few round objects at a time: kept every one, a chain over
// 70,000 objects of 0-2 KiB fills the server's disk (InsufficientStorage
// after 631 s). 2,000
// objects of 0-2 KiB before a big one make one chain part of about 4,000
// rounds (a part of tiny objects alone needs 5,000 of them and 10,000 rounds,
// ten minutes here); the work bucket must stay within a few round objects.
func TestChainOverThousandsOfTinyObjects(t *testing.T) {
	long(t)
	w := newWorld(t, "src")
	objs := tinyObjects("tiny/", 2000, 2)
	objs["tiny/zz-big"] = body(98, 6*mib)
	w.put(t, "src", objs)
	w.chainPeak(t, "tiny/", "out/tiny.zip", objs, roundBound(1))
}

// syncBuffer is a log's destination shared by goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The planner (what `s3zip create` and the Lambda run) warns before any
// part is built when chain is asked for on thousands of tiny objects, with
// chain's and auto's predictions; not on a few big objects, where chain is a
// fair choice.
func TestPlannerWarnsChainIsTheWrongTool(t *testing.T) {
	w := newWorld(t, "src")
	w.put(t, "src", tinyObjects("tiny/", 6000, 3))
	w.put(t, "src", map[string][]byte{"big/1": body(1, 6*mib), "big/2": body(2, 6*mib), "big/3": body(3, 6*mib)})
	for _, c := range []struct {
		prefix string
		warns  bool
	}{{"tiny/", true}, {"big/", false}} {
		t.Run(strings.TrimSuffix(c.prefix, "/"), func(t *testing.T) {
			var logs syncBuffer
			cfg := create.Config{WorkBucket: "work", DefaultMaxConcurrency: 8}
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			raw, _ := json.Marshal(listRequest("chain", "src", c.prefix, "out/advice.zip", nil))
			execution := "e2e-advice-" + strings.TrimSuffix(c.prefix, "/")
			job, err := (&create.Planner{S3: w.s3, Config: cfg, Log: log}).Plan(context.Background(), create.PlanInput{Request: raw, Execution: execution})
			if err != nil {
				t.Fatal(err)
			}
			state, _ := json.Marshal(job)
			if _, err := (&create.Aborter{S3: w.s3, Config: cfg}).Handle(context.Background(), create.AbortInput{State: state, Execution: execution}); err != nil {
				t.Fatal(err)
			}
			got := logs.String()
			if warned := strings.Contains(got, "chain is the wrong tool"); warned != c.warns {
				t.Fatalf("warned: %v, want %v; log:\n%s", warned, c.warns, got)
			}
			if c.warns && !(strings.Contains(got, "level=WARN") && strings.Contains(got, "where auto is predicted")) {
				t.Errorf("the warning does not give auto's prediction beside chain's:\n%s", got)
			}
			w.clean(t)
		})
	}
}

// failComplete fails the n-th CompleteMultipartUpload: a chain round the
// server refuses half-way through the chain. Each upload it creates, it
// answers only after a while, or with the error of a request cancelled in
// the meantime: the server has made the upload, the caller never learns
// its ID — what a round opened ahead meets when the round before it fails.
type failComplete struct {
	*s3.Client
	n, calls atomic.Int32
}

func (f *failComplete) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, o ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	out, err := f.Client.CreateMultipartUpload(context.WithoutCancel(ctx), in, o...)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(50 * time.Millisecond):
	}
	return out, err
}

func (f *failComplete) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if f.calls.Add(1) == f.n.Load() {
		return nil, &smithy.GenericAPIError{Code: "InsufficientStorage", Message: "No space left on device."}
	}
	return f.Client.CompleteMultipartUpload(ctx, in, o...)
}

// A chain that fails half-way removes what it built itself (round objects
// and round uploads), before the abort deletes the work prefix, and the
// server's "out of space" ends the batch with a RefusedError, not a retry.
func TestChainFailureLeavesNoRounds(t *testing.T) {
	w := newWorld(t, "src")
	objs := tinyObjects("f/", 60, 4)
	objs["f/zz-big"] = body(97, 6*mib)
	w.put(t, "src", objs)
	ctx := context.Background()
	cfg := create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4}
	raw, _ := json.Marshal(listRequest("chain", "src", "f/", "out/failed.zip", nil))
	job, err := (&create.Planner{S3: w.s3, Config: cfg}).Plan(ctx, create.PlanInput{Request: raw, Execution: "e2e-chain-failure"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &job.WorkBucket, Key: &job.PartsKey})
	if err != nil {
		t.Fatal(err)
	}
	items, err := plan.DecodeParts(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var in create.BatchInput
	in.Items, in.BatchInput.Job = items, *job
	c := &failComplete{Client: w.s3}
	c.n.Store(40)
	_, err = (&create.Worker{S3: c, Config: cfg}).Handle(ctx, in)
	if create.ErrorType(err) != "RefusedError" || create.Retryable(err) || !strings.Contains(err.Error(), "out of space") {
		t.Fatalf("err = %v (%s): want a RefusedError that says the server is out of space", err, create.ErrorType(err))
	}
	t.Logf("batch failed as it should: %v", err)
	var left []string
	p := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: &job.WorkBucket, Prefix: aws.String(job.WorkPrefix + "chain/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			left = append(left, aws.ToString(o.Key))
		}
	}
	ups, err := w.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &job.WorkBucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 || len(ups.Uploads) > 0 {
		t.Errorf("the failed chain left %d round objects %v and %d round uploads", len(left), left, len(ups.Uploads))
	}
	state, _ := json.Marshal(job)
	if _, err := (&create.Aborter{S3: w.s3, Config: cfg}).Handle(ctx, create.AbortInput{State: state, Execution: "e2e-chain-failure"}); err != nil {
		t.Fatal(err)
	}
	w.absent(t, "out/failed.zip")
	w.clean(t)
}
