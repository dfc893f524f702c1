package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/plan"
)

func runSample(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("sample", "s3zip sample --dest s3://bucket/prefix/ [--count N] [--seed S] [--scale F] [--checksum KIND] [--concurrency N] [--endpoint URL] [--create-bucket]",
		"Upload a synthetic data set (the challenge's size distribution, random bytes) for demos and benchmarks.\n"+
			"Objects go under the prefix as a folder: s3://bucket/data is taken as s3://bucket/data/.")
	dest := fs.String("dest", "", "s3://bucket/prefix/ to upload to")
	count := fs.Int("count", 200, "objects (sizes follow the challenge distribution, 5 MiB on average)")
	seed := fs.Uint64("seed", 1, "seed of the data set")
	scale := fs.Float64("scale", 1, "multiply every size by this (e.g. 0.1 for a quick run)")
	endpoint := fs.String("endpoint", "", "S3 endpoint `URL` (default $S3_ENDPOINT or $AWS_ENDPOINT_URL_S3)")
	concurrency := fs.Int("concurrency", 16, "uploads at once")
	createBucket := fs.Bool("create-bucket", false, "create the bucket first, unless it is yours already")
	checksum := fs.String("checksum", "crc32", "the checksum S3 keeps of each object, as a client uploads it: "+strings.Join(sampleChecksumNames(), ", ")+
		" (mixed: each object one of the others, by the seed)")
	if err := fs.parse(args, stdout); err != nil {
		return err
	}
	if *dest == "" {
		return usageErrorf("sample: --dest s3://bucket/prefix/ is missing")
	}
	bucket, prefix, err := parseS3URI(*dest)
	if err != nil {
		return usageErrorf("sample: --dest: %v", err)
	}
	// A prefix is a folder here. Otherwise "data" would glue the generated
	// keys to it, as in "data42/…".
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if *scale <= 0 {
		return usageErrorf("sample: --scale %v: want more than 0", *scale)
	}
	if err := atLeast("sample", "count", *count, 0); err != nil {
		return err
	}
	if err := atLeast("sample", "concurrency", *concurrency, 1); err != nil {
		return err
	}
	kinds, err := sampleChecksums(*checksum)
	if err != nil {
		return err
	}
	destination := bucketCheck{role: "destination", bucket: bucket, ifMissing: "add --create-bucket to create it, or fix the bucket name"}
	var checks []bucketCheck
	if !*createBucket {
		checks = append(checks, destination)
	}
	client, err := connect(ctx, "sample", *endpoint, checks...)
	if err != nil {
		return err
	}
	if *createBucket {
		if err := ensureBucket(ctx, client, endpointOrEnv(*endpoint), destination); err != nil {
			return fmt.Errorf("sample: %w", err)
		}
	}
	start := time.Now()
	up := sampleUpload{c: client, bucket: bucket, prefix: prefix, seed: *seed, scale: *scale, kinds: kinds, concurrency: *concurrency}
	n, total, err := up.run(ctx, plan.Challenge(*count, *seed))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "uploaded %d objects, %s, to s3://%s/%s in %.1f s\n", n, humanBytes(total), bucket, prefix, time.Since(start).Seconds())
	return nil
}

// sampleUpload is where and how `sample` uploads its data set.
type sampleUpload struct {
	c              *s3.Client
	bucket, prefix string
	seed           uint64
	scale          float64
	kinds          []sampleChecksum
	concurrency    int
}

// run uploads the entries' objects, concurrency at a time, each of random
// bytes of its scaled size stored as one of the kinds. It returns how many
// objects it uploaded and their bytes.
func (u sampleUpload) run(ctx context.Context, entries []plan.Entry) (int, int64, error) {
	var total int64
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(u.concurrency)
	for i, e := range entries {
		size := int64(float64(e.Size) * u.scale)
		total += size
		g.Go(func() error {
			body := make([]byte, size)
			rng := rand.New(rand.NewPCG(u.seed, uint64(i)))
			for k := 0; k+8 <= len(body); k += 8 {
				v := rng.Uint64()
				for b := 0; b < 8; b++ {
					body[k+b] = byte(v >> (8 * b))
				}
			}
			key := u.prefix + e.Source.Key[:2] + "/" + e.Source.Key
			kind := u.kinds[rng.IntN(len(u.kinds))]
			if err := kind.put(ctx, u.c, sampleObject{bucket: u.bucket, key: key, body: body}); err != nil {
				return fmt.Errorf("sample: put s3://%s/%s (checksum %s): %w", u.bucket, key, kind.name, err)
			}
			return nil
		})
	}
	return len(entries), total, g.Wait()
}

// ensureBucket creates the bucket ck names in the client's region. A bucket
// that is already the caller's is fine, as on a second run of the same
// sample.
func ensureBucket(ctx context.Context, c *s3.Client, endpoint string, ck bucketCheck) error {
	in := &s3.CreateBucketInput{Bucket: &ck.bucket}
	// us-east-1 is S3's default location, which it refuses to be named.
	if r := c.Options().Region; r != "" && r != defaultRegion {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err := c.CreateBucket(ctx, in)
	switch {
	case err == nil, s3err.IsCode(err, "BucketAlreadyOwnedByYou"):
		return nil
	case s3err.IsCode(err, "BucketAlreadyExists"):
		return usageErrorf("create bucket %q: the name is taken by another account (bucket names are global); choose another", ck.bucket)
	}
	if described := describeSetupError(err, endpoint, ck); described != nil {
		return described
	}
	return fmt.Errorf("create bucket %q: %w", ck.bucket, err)
}
