package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/workflow"
)

// failCompleteOf fails every CompleteMultipartUpload of keys containing
// part, as S3 failing again and again would: the finalizer's retries, then
// the state machine's, run out.
type failCompleteOf struct {
	workflow.S3
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
		runner         func(r *workflow.Runner)
		// completed says what the run completed before it failed.
		completed func() string
	}{
		{"archive-2-never-completes", wantFailure("TransientError"), func(r *workflow.Runner) {
			f.completed = nil
			r.S3 = f
		}, func() string { return "completed before failing: " + strings.Join(f.completed, ", ") }},
		{"worker-of-archive-2-fails", wantFailure("ChecksumMismatchError"), func(r *workflow.Runner) {
			build := (&workflow.Worker{S3: w.direct, Config: config(), Log: quiet}).Build
			r.Batch = func(ctx context.Context, in workflow.BatchInput) (*workflow.BatchResult, error) {
				for _, it := range in.Items {
					if it.Archive == 1 {
						return nil, &workflow.ChecksumMismatchError{Msg: fmt.Sprintf("injected: part %d of archive 2", it.Number)}
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
			pass := err != nil && c.expected == wantFailure(workflow.ErrorType(err))
			if err != nil {
				obs = append(obs, workflow.ErrorType(err)+": "+strings.SplitN(err.Error(), "\n", 2)[0])
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
