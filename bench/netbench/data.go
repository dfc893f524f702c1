package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/plan"
)

// uploadDataSet puts count objects of the challenge distribution (plan.Challenge:
// 5 MiB on average, 0.5–8 MiB) under prefix, filled with seeded random bytes.
// By default no checksum is stored: versitygw 1.8 reports a checksummed
// source's whole CRC-32 for ranged copies, which would make workers stream
// those ranges (docs/versitygw.md). withCRC stores each object's CRC-32, as
// current AWS SDKs do by default, so the planner learns it from HeadObject.
func uploadDataSet(ctx context.Context, c *s3.Client, bucket, prefix string, count int, seed uint64, withCRC bool) (int64, error) {
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		return 0, fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	entries := plan.Challenge(count, seed)
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, e := range entries {
		g.Go(func() error {
			body := seededBytes(int(e.Size), seed, uint64(i))
			key := prefix + e.Source.Key[:2] + "/" + e.Source.Key
			in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(e.Size)}
			if withCRC {
				in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
			}
			_, err := c.PutObject(ctx, in)
			if err != nil {
				return fmt.Errorf("put s3://%s/%s: %w", bucket, key, err)
			}
			return nil
		})
	}
	return total, g.Wait()
}
