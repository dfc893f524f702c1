package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// abortFake records what Abort touches.
type abortFake struct {
	fakeS3
	aborted []string
	listed  []string
}

func (f *abortFake) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	f.aborted = append(f.aborted, *in.Bucket+"/"+*in.Key+"#"+*in.UploadId)
	return &s3.AbortMultipartUploadOutput{}, nil
}
func (f *abortFake) ListParts(context.Context, *s3.ListPartsInput, ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	return nil, apiError("NoSuchUpload")
}
func (f *abortFake) ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return &s3.ListMultipartUploadsOutput{}, nil
}
func (f *abortFake) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.listed = append(f.listed, *in.Bucket+"/"+aws.ToString(in.Prefix))
	return &s3.ListObjectsV2Output{}, nil
}
func (f *abortFake) DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return &s3.DeleteObjectsOutput{}, nil
}

// When planning fails the state is the user's request: Abort must not act
// on the upload, bucket or prefix it names, only on what the deployment and
// the planner's own record say.
func TestAbortIgnoresWhatTheStateNames(t *testing.T) {
	f := &abortFake{fakeS3: *newFakeS3()}
	hostile, _ := json.Marshal(map[string]any{"uploadId": "X", "destination": map[string]string{"bucket": "other", "key": "their.zip"},
		"workBucket": "victim", "workPrefix": "data/"})
	a := &Aborter{S3: f, Config: Config{WorkBucket: "work"}}
	if _, err := a.Handle(context.Background(), AbortInput{State: hostile, Execution: "exec-1", Error: json.RawMessage(`{"Error":"RequestError","Cause":"bad"}`)}); err != nil {
		t.Fatal(err)
	}
	if len(f.aborted) != 0 {
		t.Errorf("aborted %v", f.aborted)
	}
	for _, l := range f.listed {
		if l != "work/s3zip-work/exec-1/" {
			t.Errorf("listed %s", l)
		}
	}

	// With the planner's record, its upload is aborted.
	rec, _ := json.Marshal(Job{UploadID: "U", Destination: Destination{Bucket: "dst", Key: "a.zip"}})
	f.put("work", "s3zip-work/exec-1/upload.json", rec)
	if _, err := a.Handle(context.Background(), AbortInput{State: hostile, Execution: "exec-1"}); err != nil {
		t.Fatal(err)
	}
	if len(f.aborted) == 0 || f.aborted[0] != "dst/a.zip#U" {
		t.Errorf("aborted %v, want dst/a.zip#U", f.aborted)
	}
}

func TestCopySourceEscapesEveryReservedByte(t *testing.T) {
	for key, want := range map[string]string{
		"a b+c.txt": "b/a%20b%2Bc.txt", "d/e&f=g;h": "b/d/e%26f%3Dg%3Bh", "ü/x~y_z-1.2": "b/%C3%BC/x~y_z-1.2",
	} {
		if got := s3part.CopySource("b", key, ""); got != want {
			t.Errorf("s3part.CopySource(%q) = %q, want %q", key, got, want)
		}
	}
}

// survivingUpload is an upload whose parts still being uploaded outlive
// the first aborts: ListParts finds it until the live-th abort.
type survivingUpload struct {
	abortFake
	live int
}

func (f *survivingUpload) ListParts(context.Context, *s3.ListPartsInput, ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	if len(f.aborted) < f.live {
		return &s3.ListPartsOutput{}, nil
	}
	return nil, apiError("NoSuchUpload")
}

// abortUpload aborts until S3 no longer knows the upload, 1 s × attempt
// apart, at most 5 times, and does not wait after the last abort.
func TestAbortUploadUntilGone(t *testing.T) {
	for _, c := range []struct {
		name        string
		live        int
		wantAborts  int
		wantSleeps  string
		wantFailure bool
	}{
		{"gone-at-once", 1, 1, "[]", false},
		{"survives-two", 3, 3, "[1s 2s]", false},
		{"never-goes", 99, 5, "[1s 2s 3s 4s]", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &survivingUpload{abortFake: abortFake{fakeS3: *newFakeS3()}, live: c.live}
			var sleeps []time.Duration
			a := &Aborter{S3: f, Sleep: func(d time.Duration) { sleeps = append(sleeps, d) }}
			_, err := a.abortUpload(t.Context(), &Job{UploadID: "U", Destination: Destination{Bucket: "dst", Key: "a.zip"}})
			if (err != nil) != c.wantFailure || c.wantFailure && !strings.Contains(err.Error(), "still exists after 5 aborts") {
				t.Errorf("abortUpload = %v, want failure %v", err, c.wantFailure)
			}
			if len(f.aborted) != c.wantAborts || fmt.Sprint(sleeps) != c.wantSleeps {
				t.Errorf("%d aborts waiting %v, want %d waiting %s", len(f.aborted), sleeps, c.wantAborts, c.wantSleeps)
			}
		})
	}
}

// lostCompletion completes the archives' uploads and then answers with an
// error, as a connection lost after S3 completed would: the finalizer dies
// in the instant between the completion and its record of it.
type lostCompletion struct {
	S3
	completed []string
}

func (l *lostCompletion) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	out, err := l.S3.CompleteMultipartUpload(ctx, in, opts...)
	if err != nil || aws.ToString(in.Bucket) != "dst" {
		return out, err
	}
	l.completed = append(l.completed, aws.ToString(in.Key))
	return nil, errors.New("connection lost after the completion")
}

// A run whose finalizer completes an archive and fails before it records
// it leaves no archive: Abort finds it by the record written before the
// completion (its size and CRC-32), for one archive and for a split run's.
func TestAbortDeletesAnArchiveCompletedBeforeItsRecord(t *testing.T) {
	for _, c := range []struct{ name, extra string }{
		{"one", ""},
		{"split", `,"splitEntries":3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, mixedObjects("m/", s3test.ChecksumCRC32))
			lost := &lostCompletion{S3: e.s3}
			r := e.runner()
			r.S3 = lost
			_, err := r.Run(context.Background(), request("duo", "m/", c.name+".zip", c.extra), "lost-"+c.name)
			if err == nil || !strings.Contains(err.Error(), "connection lost") {
				t.Fatalf("run error %v, want the lost completion's", err)
			}
			if len(lost.completed) == 0 {
				t.Fatal("no archive was completed: the test needs one")
			}
			for _, key := range lost.completed {
				if _, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String(key)}); err == nil {
					t.Errorf("the failed run left its archive s3://dst/%s", key)
				}
			}
			e.assertClean(t)
		})
	}
}
