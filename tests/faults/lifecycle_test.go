package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/plan"
)

// killAfter passes S3 calls through until it has seen n finished part
// uploads (UploadPart or UploadPartCopy), then cancels the batch: the parts
// in flight die half-way, like a worker whose Lambda was killed.
type killAfter struct {
	create.S3
	n      int32
	seen   atomic.Int32
	cancel context.CancelFunc
}

func (k *killAfter) UploadPart(ctx context.Context, in *s3.UploadPartInput, o ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	out, err := k.S3.UploadPart(ctx, in, o...)
	if k.seen.Add(1) == k.n {
		k.cancel()
	}
	return out, err
}

func (k *killAfter) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, o ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	out, err := k.S3.UploadPartCopy(ctx, in, o...)
	if k.seen.Add(1) == k.n {
		k.cancel()
	}
	return out, err
}

// TestWorkerKilled: every batch's first attempt dies after one of its parts
// was uploaded (the others cut off mid-request); the retry builds the whole
// batch again under the same part numbers.
func TestWorkerKilled(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	// Chains delete their round objects as they go: a killed chain must not
	// leave one the retry or the finalizer misses.
	for _, strategy := range []string{"duo", "stream", "chain"} {
		t.Run(strategy, func(t *testing.T) {
			started := time.Now()
			var mu sync.Mutex
			tries := map[int]int{}
			killed := 0
			cfg := config()
			batch := func(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
				mu.Lock()
				tries[in.Items[0].Number]++
				first := tries[in.Items[0].Number] == 1
				mu.Unlock()
				if !first {
					return (&create.Worker{S3: w.direct, Config: cfg, Log: quiet}).Handle(ctx, in)
				}
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				k := &killAfter{S3: w.direct, n: 1, cancel: cancel}
				_, _ = (&create.Worker{S3: k, Config: cfg, Log: quiet}).Handle(ctx, in)
				mu.Lock()
				killed++
				mu.Unlock()
				// The Map sees a dead worker as a timeout and retries it.
				return nil, &create.DeadlineError{Done: int(k.seen.Load()), Left: len(in.Items) - int(k.seen.Load())}
			}
			r := w.runner(w.direct)
			r.Batch = batch
			dest := "out/killed-" + strategy + ".zip"
			_, err := r.Run(context.Background(), request(strategy, "d/", dest, false), "killed-"+strategy)
			t.Logf("%d batches killed once", killed)
			w.judge(t, started, nil, wantArchive, outcome{err: err, dest: dest, want: w.wants("d/")})
		})
	}
}

// buildMap does what the Distributed Map does, in the test: every part
// job through a worker, results in the ResultWriter's layout.
func buildMap(t *testing.T, c create.S3, job *create.Job) *stepfn.MapResults {
	t.Helper()
	ctx := context.Background()
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &job.WorkBucket, Key: &job.PartsKey})
	if err != nil {
		t.Fatal(err)
	}
	items, err := plan.DecodeParts(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var in create.BatchInput
	in.Items = items
	in.BatchInput.Job = *job
	res, err := (&create.Worker{S3: c, Config: config(), Log: quiet}).Handle(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(res)
	children := []stepfn.ChildResult{{Status: "SUCCEEDED", Output: string(doc)}}
	d, err := stepfn.WriteResults[stepfn.ChildResult](ctx, stepfn.Put(c), stepfn.ResultLocation{Bucket: job.WorkBucket, Prefix: job.WorkPrefix + "map/", MapRunArn: "test"}, children, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &stepfn.MapResults{ResultWriterDetails: d}
}

// crashAt makes the finalizer die right after one S3 call succeeded.
type crashAt struct {
	create.S3
	op string
}

// errCrashed is what crashAt panics with: the Lambda dies once S3 has
// acted, so nothing after the call runs (an error returned would let the
// finalizer go on: a report it could not write is only a warning).
var errCrashed = errors.New("finalizer crashed (injected)")

// finalizeUntilCrash runs f and turns crashAt's panic into errCrashed.
func finalizeUntilCrash(ctx context.Context, f *create.Finalizer, in create.FinalizeInput) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != errCrashed {
				panic(r)
			}
			err = errCrashed
		}
	}()
	_, err = f.Handle(ctx, in)
	return err
}

func (c *crashAt) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	out, err := c.S3.CompleteMultipartUpload(ctx, in, o...)
	if err == nil && c.op == "CompleteMultipartUpload" {
		panic(errCrashed)
	}
	return out, err
}

func (c *crashAt) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	out, err := c.S3.PutObject(ctx, in, o...)
	if err == nil && c.op == "PutObject" {
		panic(errCrashed)
	}
	return out, err
}

func (c *crashAt) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, o ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	out, err := c.S3.DeleteObjects(ctx, in, o...)
	if err == nil && c.op == "DeleteObjects" {
		panic(errCrashed)
	}
	return out, err
}

// TestFinalizerRerun: the finalizer dies after completing the upload (or
// after writing the report, or half-way through deleting the work prefix)
// and is run again with the same input; the second run must finish the job.
func TestFinalizerRerun(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for _, op := range []string{"CompleteMultipartUpload", "PutObject", "DeleteObjects"} {
		t.Run("crash-after-"+op, func(t *testing.T) {
			started := time.Now()
			ctx := context.Background()
			dest := "out/rerun-" + op + ".zip"
			job, err := (&create.Planner{S3: w.direct, Config: config(), Log: quiet}).Plan(ctx, create.PlanInput{Request: request("duo", "d/", dest, false), Execution: "rerun-" + op})
			if err != nil {
				t.Fatal(err)
			}
			in := create.FinalizeInput{Job: *job, Results: buildMap(t, w.direct, job)}
			err = finalizeUntilCrash(ctx, &create.Finalizer{S3: &crashAt{S3: w.direct, op: op}, Config: config(), Log: quiet}, in)
			if !errors.Is(err, errCrashed) {
				record(t, started, wantArchive, fmt.Sprintf("BAD: first finalizer run: %v, want the injected crash", err), false)
				w.scrub(t)
				return
			}
			_, err = (&create.Finalizer{S3: w.direct, Config: config(), Log: quiet}).Handle(ctx, in)
			w.judge(t, started, nil, wantArchive, outcome{err: err, dest: dest, want: w.wants("d/")})
		})
	}
}

// TestPlannerRerun: the planner runs twice for the same execution (its
// Lambda retried after it had done its work); the run then finishes, or
// fails and aborts. Neither may leave the first attempt's upload behind.
func TestPlannerRerun(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for _, end := range []string{"finish", "abort"} {
		t.Run("then-"+end, func(t *testing.T) {
			started := time.Now()
			ctx := context.Background()
			dest := "out/replan-" + end + ".zip"
			execution := "replan-" + end
			pl := &create.Planner{S3: w.direct, Config: config(), Log: quiet}
			in := create.PlanInput{Request: request("duo", "d/", dest, false), Execution: execution}
			if _, err := pl.Plan(ctx, in); err != nil {
				t.Fatal(err)
			}
			job, err := pl.Plan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if end == "finish" {
				_, err = (&create.Finalizer{S3: w.direct, Config: config(), Log: quiet}).Handle(ctx, create.FinalizeInput{Job: *job, Results: buildMap(t, w.direct, job)})
				w.judge(t, started, nil, wantArchive, outcome{err: err, dest: dest, want: w.wants("d/")})
				return
			}
			state, _ := json.Marshal(job)
			cause := &stepfn.TransientError{Op: "BuildParts", Err: errors.New("injected")}
			if _, aerr := (&create.Aborter{S3: w.direct, Config: config(), Log: quiet}).Handle(ctx, create.AbortInput{State: state, Execution: execution}); aerr != nil {
				t.Fatal(aerr)
			}
			w.judge(t, started, nil, wantFailure("TransientError"), outcome{err: cause, dest: dest})
		})
	}
}

// TestSourceChanged: a source object is overwritten or deleted after the
// plan pinned its ETag and before a worker reads or copies it.
func TestSourceChanged(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for _, c := range []struct {
		name, strategy, key string
		change              func(t *testing.T, key string)
	}{
		{"overwritten-copied/duo", "duo", "d/big/b.bin", func(t *testing.T, key string) { w.srv.PutObject(t, "src", key, body(999, len(w.src[key]))) }},
		{"overwritten-streamed/stream", "stream", "d/big/a.bin", func(t *testing.T, key string) { w.srv.PutObject(t, "src", key, body(999, len(w.src[key]))) }},
		{"deleted/duo", "duo", "d/small/03.txt", func(t *testing.T, key string) {
			if _, err := w.direct.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("src"), Key: &key}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := time.Now()
			original := w.src[c.key]
			var once sync.Once
			cfg := config()
			r := w.runner(w.direct)
			r.Batch = func(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
				once.Do(func() { c.change(t, c.key) })
				return (&create.Worker{S3: w.direct, Config: cfg, Log: quiet}).Handle(ctx, in)
			}
			dest := "out/changed-" + strings.ReplaceAll(c.name, "/", "-") + ".zip"
			_, err := r.Run(context.Background(), request(c.strategy, "d/", dest, false), "changed-"+strings.ReplaceAll(c.name, "/", "-"))
			if err != nil && !strings.Contains(err.Error(), strings.TrimPrefix(c.key, "")) {
				t.Errorf("the error does not name the changed object %s: %v", c.key, err)
			}
			w.judge(t, started, nil, wantFailure("SourceChangedError"), outcome{err: err, dest: dest})
			w.srv.PutObject(t, "src", c.key, original) // for the next case
		})
	}
}

// TestDestinationExists: an object at the destination key fails the run
// before any write, unless overwrite was asked.
func TestDestinationExists(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for _, overwrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("overwrite=%v", overwrite), func(t *testing.T) {
			started := time.Now()
			dest := fmt.Sprintf("out/exists-%v.zip", overwrite)
			old := []byte("an archive someone else made")
			w.srv.PutObject(t, "dst", dest, old)
			_, err := w.runner(w.direct).Run(context.Background(), request("duo", "d/", dest, overwrite), fmt.Sprintf("exists-%v", overwrite))
			if overwrite {
				w.judge(t, started, nil, wantArchive, outcome{err: err, dest: dest, want: w.wants("d/")})
				return
			}
			w.judge(t, started, nil, wantFailure("DestinationExistsError"), outcome{err: err, dest: dest, previous: old})
		})
	}
}

// TestConcurrentRuns: two runs of different sources race for one
// destination. S3 makes CompleteMultipartUpload atomic (the object is one
// upload's parts, never a mix) and last-writer-wins, so whatever each run
// reports, the object in the end must be one run's whole, valid archive,
// and a run reported as failed must not be the one whose archive is there.
func TestConcurrentRuns(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "a/", 1)
	w.putSources(t, "b/", 2)
	for _, overwrite := range []bool{false, true} {
		for _, faults := range []bool{false, true} {
			name := fmt.Sprintf("overwrite=%v", overwrite)
			if faults {
				name += "/moderate-faults"
			}
			t.Run(name, func(t *testing.T) {
				started := time.Now()
				dest := "out/race-" + strings.ReplaceAll(name, "/", "-") + ".zip"
				var proxies []*fp.Proxy
				errs := make([]error, 2)
				var wg sync.WaitGroup
				for i, prefix := range []string{"a/", "b/"} {
					c := w.direct
					if faults {
						p, pc := w.faults(t, uint64(40+i), fp.Rule{Faults: fp.AllFaults, Rate: moderate})
						proxies, c = append(proxies, p), pc
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i] = w.runner(c).Run(context.Background(), request("duo", prefix, dest, overwrite), fmt.Sprintf("race-%d-%s", i, strings.ReplaceAll(name, "/", "-")))
					}()
				}
				wg.Wait()
				for _, p := range proxies {
					p.SetRules(nil)
				}
				w.judgeRace(t, started, dest, errs, proxies)
			})
		}
	}
}

func (w *world) judgeRace(t *testing.T, started time.Time, dest string, errs []error, proxies []*fp.Proxy) {
	t.Helper()
	var obs []string
	pass := true
	bad := func(format string, a ...any) {
		pass = false
		obs = append(obs, "BAD: "+fmt.Sprintf(format, a...))
	}
	for i, err := range errs {
		if err == nil {
			obs = append(obs, fmt.Sprintf("run %s ok", []string{"a", "b"}[i]))
			continue
		}
		typ := create.ErrorType(err)
		obs = append(obs, fmt.Sprintf("run %s %s", []string{"a", "b"}[i], typ))
		t.Logf("run %d: %v", i, err)
		if typ == stepfn.TypeUntyped {
			bad("run %d failed without a type: %v", i, err)
		}
	}
	got := w.object(t, dest)
	switch {
	case got == nil && (errs[0] == nil || errs[1] == nil):
		bad("a run succeeded but there is no archive")
	case got == nil:
		obs = append(obs, "no archive")
	default:
		winner := -1
		for i, prefix := range []string{"a/", "b/"} {
			if msg, err := w.verify(t, dest, w.wants(prefix)); err == nil {
				winner = i
				obs = append(obs, fmt.Sprintf("archive is run %s's: %s", prefix[:1], msg))
				break
			}
		}
		switch {
		case winner < 0:
			bad("the archive is neither run's valid archive")
		case errs[winner] != nil:
			bad("the archive is that of run %d, which reported failure", winner)
		}
	}
	if left := w.leftovers(t); len(left) > 0 {
		bad("left behind: %s", strings.Join(left, ", "))
	} else {
		obs = append(obs, "clean")
	}
	for _, p := range proxies {
		obs = append(obs, p.Summary())
	}
	record(t, started, "one run's whole archive, or clean failures", strings.Join(obs, "; "), pass)
	w.scrub(t)
}
