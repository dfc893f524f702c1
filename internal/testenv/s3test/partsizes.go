package s3test

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// PartSizes is a client that, before it completes a multipart upload of
// Bucket, lists what was uploaded and checks it against S3's part rule:
// every part but the last at least MinPartSize. A test reads Problems (and
// Uploads, how many were checked) after the run. It sees what the server
// holds when Complete is sent, so a part replaced after its uploader moved
// on (a late copy into its number) shows too.
type PartSizes struct {
	*s3.Client
	Bucket string

	mu       sync.Mutex
	problems []string
	uploads  int
}

// CompleteMultipartUpload checks the upload's parts, then completes it.
func (c *PartSizes) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if aws.ToString(in.Bucket) == c.Bucket && in.MultipartUpload != nil {
		c.check(ctx, in)
	}
	return c.Client.CompleteMultipartUpload(ctx, in, optFns...)
}

func (c *PartSizes) check(ctx context.Context, in *s3.CompleteMultipartUploadInput) {
	sizes := map[int32]int64{}
	p := s3.NewListPartsPaginator(c.Client, &s3.ListPartsInput{Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId})
	var bad []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			bad = append(bad, fmt.Sprintf("list parts of s3://%s/%s: %v", c.Bucket, aws.ToString(in.Key), err))
			break
		}
		for _, part := range page.Parts {
			sizes[aws.ToInt32(part.PartNumber)] = aws.ToInt64(part.Size)
		}
	}
	parts := in.MultipartUpload.Parts
	for _, part := range parts[:max(0, len(parts)-1)] {
		if n := aws.ToInt32(part.PartNumber); sizes[n] < MinPartSize {
			bad = append(bad, fmt.Sprintf("s3://%s/%s part %d (of %d) is %d bytes, under the 5 MiB minimum of all but the last", c.Bucket, aws.ToString(in.Key), n, len(parts), sizes[n]))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uploads++
	c.problems = append(c.problems, bad...)
}

// Problems lists every part that broke the rule, and every listing that failed.
func (c *PartSizes) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.problems...)
}

// Uploads is how many completions were checked.
func (c *PartSizes) Uploads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.uploads
}
