package stepfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// rawGet is a GetFunc that names no failure: the workflows give their own.
func rawGet(c *s3.Client) GetFunc {
	return func(ctx context.Context, bucket, key string, limit int64) ([]byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		doc, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
		if int64(len(doc)) > limit {
			return nil, fmt.Errorf("s3://%s/%s is over %d bytes", bucket, key, limit)
		}
		return doc, err
	}
}

func children(n int, status string) []ChildResult {
	out := make([]ChildResult, n)
	for i := range out {
		out[i] = ChildResult{Status: status, Output: fmt.Sprintf(`{"batch":%d}`, i)}
		if status != "SUCCEEDED" {
			out[i] = ChildResult{Status: status, Error: "TransientError", Cause: fmt.Sprintf("batch %d", i)}
		}
	}
	return out
}

// What WriteResults writes, EachOutput reads back, in order, across result
// files (1,000 records each), and FirstFailedBatch finds the failed batch's
// own error; a run with a failed batch cannot be read as complete.
func TestResultWriterLayoutRoundTrip(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "work")
	c := srv.Client(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name              string
		succeeded, failed int
		wantFiles         []string
	}{
		{"one-file", 3, 0, []string{"SUCCEEDED_0.json", "manifest.json"}},
		{"exactly-1000-per-file", 1000, 0, []string{"SUCCEEDED_0.json", "manifest.json"}},
		{"1001-spills-to-a-second-file", 1001, 0, []string{"SUCCEEDED_0.json", "SUCCEEDED_1.json", "manifest.json"}},
		{"a-failed-batch", 2, 1, []string{"FAILED_0.json", "SUCCEEDED_0.json", "manifest.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "exec/" + tc.name + "/map/"
			arn := "arn:aws:states:us-east-1:123456789012:mapRun:sm/Map:" + tc.name
			d, err := WriteResults(ctx, Put(c), ResultLocation{Bucket: "work", Prefix: prefix, MapRunArn: arn}, children(tc.succeeded, "SUCCEEDED"), children(tc.failed, "FAILED"))
			if err != nil {
				t.Fatal(err)
			}
			if want := prefix + tc.name + "/manifest.json"; d.Bucket != "work" || d.Key != want {
				t.Fatalf("manifest at s3://%s/%s, want s3://work/%s (under the map run id, the ARN's last segment)", d.Bucket, d.Key, want)
			}
			list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("work"), Prefix: aws.String(prefix)})
			if err != nil {
				t.Fatal(err)
			}
			var files []string
			for _, o := range list.Contents {
				files = append(files, strings.TrimPrefix(*o.Key, prefix+tc.name+"/"))
			}
			if !slices.Equal(files, tc.wantFiles) {
				t.Errorf("files %v, want %v", files, tc.wantFiles)
			}

			var got []string
			err = EachOutput(ctx, rawGet(c), d, func(output []byte) error {
				got = append(got, string(output))
				return nil
			})
			if tc.failed > 0 {
				if !errors.Is(err, ErrMapIncomplete) {
					t.Fatalf("EachOutput with a failed batch: err = %v, want ErrMapIncomplete", err)
				}
				e, cause, ok := FirstFailedBatch(ctx, c, "work", prefix)
				if !ok || e != "TransientError" || cause != "batch 0" {
					t.Errorf("FirstFailedBatch = %q, %q, %v; want the failed batch's own TransientError, batch 0", e, cause, ok)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.succeeded || got[0] != `{"batch":0}` || got[len(got)-1] != fmt.Sprintf(`{"batch":%d}`, tc.succeeded-1) {
				t.Errorf("read %d outputs (first %q), want the %d written, in order", len(got), got[0], tc.succeeded)
			}
			if _, _, ok := FirstFailedBatch(ctx, c, "work", prefix); ok {
				t.Error("FirstFailedBatch found a failed batch in a run with none")
			}
		})
	}
}

// A child the manifest lists as succeeded but whose record says otherwise,
// and a pending file, are incomplete runs too; a reader's failure says
// which file.
func TestEachOutputRefusesWhatIsNotAllThere(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "work")
	c := srv.Client(t)
	ctx := context.Background()
	put := func(key string, v any) {
		doc, _ := json.Marshal(v)
		srv.PutObject(t, "work", key, doc)
	}

	put("run/SUCCEEDED_0.json", []ChildResult{{Status: "SUCCEEDED", Output: "{}"}, {Status: "TIMED_OUT", Error: "States.Timeout"}})
	var m ResultManifest
	m.ResultFiles.Succeeded = []ResultFile{{Key: "run/SUCCEEDED_0.json"}}
	put("run/manifest.json", m)
	err := EachOutput(ctx, rawGet(c), &ResultWriterDetails{Bucket: "work", Key: "run/manifest.json"}, func([]byte) error { return nil })
	if !errors.Is(err, ErrMapIncomplete) || !strings.Contains(err.Error(), "TIMED_OUT") {
		t.Errorf("a timed-out child: err = %v, want ErrMapIncomplete naming its status", err)
	}

	m.ResultFiles.Pending = []ResultFile{{Key: "run/PENDING_0.json"}}
	put("run/manifest.json", m)
	err = EachOutput(ctx, rawGet(c), &ResultWriterDetails{Bucket: "work", Key: "run/manifest.json"}, func([]byte) error { return nil })
	if !errors.Is(err, ErrMapIncomplete) {
		t.Errorf("a pending file: err = %v, want ErrMapIncomplete", err)
	}

	err = EachOutput(ctx, rawGet(c), nil, func([]byte) error { return nil })
	if !errors.Is(err, ErrMapIncomplete) {
		t.Errorf("no ResultWriterDetails: err = %v, want ErrMapIncomplete", err)
	}

	err = EachOutput(ctx, rawGet(c), &ResultWriterDetails{Bucket: "work", Key: "run/missing.json"}, func([]byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "map results manifest") {
		t.Errorf("a missing manifest: err = %v, want one naming the manifest", err)
	}
}
