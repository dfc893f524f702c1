package e2e_test

import (
	"context"
	"crypto/sha256"
	"hash"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

type hasher struct{ h hash.Hash }

func newHasher() *hasher            { return &hasher{sha256.New()} }
func (h *hasher) Write(b []byte)    { h.h.Write(b) }
func (h *hasher) sum() (s [32]byte) { copy(s[:], h.h.Sum(nil)); return s }

func completeParts(t *testing.T, c *s3.Client, bucket, key string, uploadID *string, parts []*s3.UploadPartOutput) {
	t.Helper()
	var done []types.CompletedPart
	for i, p := range parts {
		n := int32(i + 1)
		done = append(done, types.CompletedPart{PartNumber: &n, ETag: p.ETag})
	}
	_, err := c.CompleteMultipartUpload(context.Background(), &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: uploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil {
		t.Fatal(err)
	}
}
