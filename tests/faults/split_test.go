package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// failCompleteOf fails every CompleteMultipartUpload of keys containing
// part, as S3 failing again and again would: the finalizer's retries, then
// the state machine's, run out.
type failCompleteOf struct {
	create.S3
	part      string
	completed []string // the keys completed, one at a time (the finalizer's)
}

func (f *failCompleteOf) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if strings.Contains(aws.ToString(in.Key), f.part) {
		return nil, &smithy.GenericAPIError{Code: "InternalError", Message: "injected: S3 failed to complete " + aws.ToString(in.Key)}
	}
	out, err := f.S3.CompleteMultipartUpload(ctx, in, o...)
	if err == nil {
		f.completed = append(f.completed, aws.ToString(in.Key))
	}
	return out, err
}

func splitRequest(strategy, prefix, dest string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{
		"source":      map[string]any{"bucket": "src", "prefix": prefix},
		"destination": map[string]any{"bucket": "dst", "key": dest},
		"options":     map[string]any{"strategy": strategy, "splitSize": 6 * mib},
	})
	return raw
}

// TestSplitRunFailsWhole: a split run that fails half-way leaves none of
// its archives and none of their uploads: not when its second archive
// never completes (the first is complete by then: Abort deletes it), nor
// when a worker building a part of the second archive fails (every
// archive's upload is aborted).
func TestSplitRunFailsWhole(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	f := &failCompleteOf{S3: w.direct, part: "-0002."}
	for _, c := range []struct {
		name, expected string
		runner         func(r *create.Runner)
		// completed says what the run completed before it failed.
		completed func() string
	}{
		{"archive-2-never-completes", wantFailure("TransientError"), func(r *create.Runner) {
			f.completed = nil
			r.S3 = f
		}, func() string { return "completed before failing: " + strings.Join(f.completed, ", ") }},
		{"worker-of-archive-2-fails", wantFailure("ChecksumMismatchError"), func(r *create.Runner) {
			build := (&create.Worker{S3: w.direct, Config: config(), Log: quiet}).Handle
			r.Batch = func(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
				for _, it := range in.Items {
					if it.Archive == 1 {
						return nil, &failure.ChecksumMismatchError{Msg: fmt.Sprintf("injected: part %d of archive 2", it.Number)}
					}
				}
				return build(ctx, in)
			}
		}, func() string { return "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := time.Now()
			dest := "out/split-" + c.name + ".zip"
			r := w.runner(w.direct)
			r.Attempts = 2
			c.runner(r)
			_, err := r.Run(context.Background(), splitRequest("duo", "d/", dest), "split-"+c.name)
			var obs []string
			pass := err != nil && c.expected == wantFailure(create.ErrorType(err))
			if err != nil {
				obs = append(obs, create.ErrorType(err)+": "+strings.SplitN(err.Error(), "\n", 2)[0])
			} else {
				obs = append(obs, "BAD: succeeded")
			}
			if done := c.completed(); done != "" {
				// The case is only the case if an archive was complete.
				obs = append(obs, done)
				pass = pass && strings.Contains(done, "-0001.zip")
			}
			// Nothing of the set may be left: no name-000N.zip, no report.
			stem := strings.TrimSuffix(dest, ".zip")
			list, lerr := w.direct.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: aws.String(stem)})
			if lerr != nil {
				t.Fatal(lerr)
			}
			for _, o := range list.Contents {
				pass = false
				obs = append(obs, "BAD: left behind s3://dst/"+aws.ToString(o.Key))
			}
			w.conclude(t, started, nil, c.expected, obs, pass)
		})
	}
}

// crashSplitAt is a finalizer whose Lambda dies right after S3 completed
// the second archive, or took the run's report.
type crashSplitAt struct {
	create.S3
	op        string // "complete-2" or "report"
	completes int
}

func (c *crashSplitAt) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	out, err := c.S3.CompleteMultipartUpload(ctx, in, o...)
	if err == nil {
		if c.completes++; c.op == "complete-2" && c.completes == 2 {
			panic(errCrashed)
		}
	}
	return out, err
}

func (c *crashSplitAt) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	out, err := c.S3.PutObject(ctx, in, o...)
	if err == nil && c.op == "report" && strings.HasSuffix(aws.ToString(in.Key), ".report.json") {
		panic(errCrashed)
	}
	return out, err
}

// TestSplitFinalizerRerun: a split run's finalizer dies after completing
// its second archive, or after writing the report, and runs again with the
// same input: it carries on from the archives already there (their
// uploads are gone) and its own report, and finishes with every archive.
func TestSplitFinalizerRerun(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for _, op := range []string{"complete-2", "report"} {
		t.Run("crash-after-"+op, func(t *testing.T) {
			started := time.Now()
			ctx := context.Background()
			dest := "out/split-rerun-" + op + ".zip"
			job, err := (&create.Planner{S3: w.direct, Config: config(), Log: quiet}).Plan(ctx, create.PlanInput{Request: splitRequest("duo", "d/", dest), Execution: "split-rerun-" + op})
			if err != nil {
				t.Fatal(err)
			}
			in := create.FinalizeInput{Job: *job, Results: buildMap(t, w.direct, job)}
			if err := finalizeUntilCrash(ctx, &create.Finalizer{S3: &crashSplitAt{S3: w.direct, op: op}, Config: config(), Log: quiet}, in); !errors.Is(err, errCrashed) {
				w.conclude(t, started, nil, wantArchive, []string{fmt.Sprintf("BAD: first finalizer run: %v, want the injected crash", err)}, false)
				return
			}
			out, err := (&create.Finalizer{S3: w.direct, Config: config(), Log: quiet}).Handle(ctx, in)
			var obs []string
			pass := err == nil && len(out.Archives) >= 3
			if err != nil {
				obs = append(obs, "BAD: the second run: "+err.Error())
			} else {
				want := w.wants("d/")
				var got []zipcheck.Want
				for k, a := range out.Archives {
					path := filepath.Join(t.TempDir(), fmt.Sprintf("%d.zip", k))
					w.srv.DownloadFile(t, "dst", create.ArchiveKey(dest, k), path)
					entries, rerr := zipcheck.CheckReader(zipcheck.ReaderGo, path)
					if rerr != nil || len(entries) != a.Entries {
						pass = false
						obs = append(obs, fmt.Sprintf("BAD: archive %d: %v, %d entries (output: %d)", k+1, rerr, len(entries), a.Entries))
					}
					for _, e := range entries {
						got = append(got, zipcheck.Want{Name: e.Name, Size: e.Size, SHA256: e.SHA256})
					}
				}
				sort.Slice(got, func(a, b int) bool { return got[a].Name < got[b].Name })
				if !slices.Equal(got, want) {
					pass = false
					obs = append(obs, fmt.Sprintf("BAD: the archives hold %d entries, not the %d sources' bytes", len(got), len(want)))
				} else {
					obs = append(obs, fmt.Sprintf("%d archives, together the sources", len(out.Archives)))
				}
			}
			w.conclude(t, started, nil, wantArchive, obs, pass)
		})
	}
}
