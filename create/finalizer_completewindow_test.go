package create

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

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
