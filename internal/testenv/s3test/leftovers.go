package s3test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Leftovers lists what a finished or failed run must not leave behind:
// every object in workBucket, and every multipart upload in it and in the
// other buckets given.
func (s *Server) Leftovers(tb testing.TB, workBucket string, uploadBuckets ...string) []string {
	tb.Helper()
	ctx := context.Background()
	c := s.rawClient()
	var left []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &workBucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			tb.Fatalf("list s3://%s: %v", workBucket, err)
		}
		for _, o := range page.Contents {
			left = append(left, "work object "+aws.ToString(o.Key))
		}
	}
	for _, b := range append([]string{workBucket}, uploadBuckets...) {
		ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b)})
		if err != nil {
			tb.Fatalf("list uploads of s3://%s: %v", b, err)
		}
		for _, u := range ups.Uploads {
			left = append(left, "multipart upload of "+aws.ToString(u.Key)+" in "+b)
		}
	}
	return left
}

// Bytes returns size pseudo-random bytes, the same for the same seed.
func Bytes(seed uint64, size int) []byte {
	b := make([]byte, size)
	rng := rand.New(rand.NewPCG(seed, uint64(size)))
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for k := 0; k < 8 && i+k < len(b); k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// NumberedObjects are n objects of size pseudo-random bytes each, keyed
// prefix00000, prefix00001, …: many small objects for PutObjects.
func NumberedObjects(prefix string, n, size int) map[string][]byte {
	objects := make(map[string][]byte, n)
	for i := range n {
		objects[fmt.Sprintf("%s%05d", prefix, i)] = Bytes(uint64(i), size)
	}
	return objects
}
