package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// With SourceSize the proxy refuses, as S3 does, a ranged copy of a source
// of 5 MiB or less, and lets through whole copies of it and ranged copies
// of larger sources (which versitygw carries out alike).
func TestStrictRefusesRangedCopiesOfSmallSources(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	srv.PutObject(t, "bkt", "small key+?.bin", s3test.Bytes(1, MinRangedCopySource))
	srv.PutObject(t, "bkt", "big", s3test.Bytes(2, MinRangedCopySource+1))
	p, err := Start(Config{Target: srv.Endpoint(), SourceSize: srv.ObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := srv.Client(t, func(o *s3.Options) { o.BaseEndpoint = aws.String(p.URL()) })
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("dst")})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		key, rng string
		refused  bool
	}{
		{"small key+?.bin", "bytes=0-99", true},
		{"small key+?.bin", fmt.Sprintf("bytes=0-%d", MinRangedCopySource-1), true}, // the whole source, as a range
		{"small key+?.bin", "", false},
		{"big", "bytes=1-5242880", false},
	} {
		in := &s3.UploadPartCopyInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: up.UploadId, PartNumber: aws.Int32(int32(i + 1)),
			CopySource: aws.String(s3part.CopySource("bkt", tc.key, ""))}
		if tc.rng != "" {
			in.CopySourceRange = aws.String(tc.rng)
		}
		_, err := c.UploadPartCopy(ctx, in)
		var ae smithy.APIError
		if refused := errors.As(err, &ae) && ae.ErrorCode() == "InvalidRequest"; refused != tc.refused || (!tc.refused && err != nil) {
			t.Errorf("copy of %q %q: %v, want refused %v", tc.key, tc.rng, err, tc.refused)
		}
	}
	if got := p.StrictRefusals(); len(got) != 2 || !strings.Contains(got[0], "s3://bkt/small key+?.bin, a source of 5242880 bytes") {
		t.Errorf("refusals %q", got)
	}
}
