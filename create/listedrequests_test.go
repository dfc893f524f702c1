package create

import (
	"context"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/s3part"
)

// listedBucket is a source bucket of generated objects, too many to put
// into the local server in a unit test: its objects are computed from their
// index (a seeded log-normal size around 4 KiB, bytes from the index, one
// in three stored without a CRC-32), and everything else goes to the local
// server. A copy from it is the upload of its bytes, as S3 does it.
type listedBucket struct {
	*s3.Client
	n int
	// counts is the requests it answered itself, by API (the local
	// server's are counted by the client's s3metrics), and sourced those
	// that named one of the generated objects.
	mu      sync.Mutex
	counts  map[string]int
	sourced int
}

const listedName = "listed"

func listedKey(i int) string { return fmt.Sprintf("k/%07d", i) }

func listedSize(i int) int64 {
	rng := rand.New(rand.NewPCG(uint64(i), 11))
	return int64(math.Exp(math.Log(4096) + 0.8*rng.NormFloat64()))
}

func listedBody(i int) []byte {
	b := make([]byte, listedSize(i))
	rng := rand.New(rand.NewPCG(uint64(i), 12))
	for j := range b {
		b[j] = byte(rng.Uint32())
	}
	return b
}

// listedStores says whether S3 stores the object's CRC-32 (two in three).
func listedStores(i int) bool { return i%3 != 0 }

func listedIndex(key string) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(key, "k/"))
	return i, err == nil && strings.HasPrefix(key, "k/")
}

func (c *listedBucket) count(api, bucket string) {
	if bucket != listedName {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[api]++
	if api != "ListObjectsV2" {
		c.sourced++
	}
}

func (c *listedBucket) answered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

func (c *listedBucket) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	c.count("ListObjectsV2", aws.ToString(in.Bucket))
	if aws.ToString(in.Bucket) != listedName {
		return c.Client.ListObjectsV2(ctx, in, opts...)
	}
	prefix := aws.ToString(in.Prefix)
	from := sort.Search(c.n, func(i int) bool {
		k := listedKey(i)
		return k > aws.ToString(in.StartAfter) && k >= prefix
	})
	if tok := aws.ToString(in.ContinuationToken); tok != "" {
		from, _ = strconv.Atoi(tok)
	}
	size := int(aws.ToInt32(in.MaxKeys))
	if size <= 0 || size > 1000 {
		size = 1000
	}
	out := &s3.ListObjectsV2Output{IsTruncated: aws.Bool(false)}
	i := from
	for ; i < c.n && len(out.Contents) < size; i++ {
		k := listedKey(i)
		if !strings.HasPrefix(k, prefix) {
			break
		}
		o := types.Object{Key: aws.String(k), Size: aws.Int64(listedSize(i)), ETag: aws.String(fmt.Sprintf(`"%032x"`, i)), LastModified: aws.Time(time.Unix(1.7e9, 0).UTC())}
		if listedStores(i) {
			o.ChecksumAlgorithm, o.ChecksumType = []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32}, types.ChecksumTypeFullObject
		}
		out.Contents = append(out.Contents, o)
	}
	if i < c.n && strings.HasPrefix(listedKey(i), prefix) {
		out.IsTruncated, out.NextContinuationToken = aws.Bool(true), aws.String(strconv.Itoa(i))
	}
	out.KeyCount = aws.Int32(int32(len(out.Contents)))
	return out, nil
}

func (c *listedBucket) HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	c.count("HeadObject", aws.ToString(in.Bucket))
	if aws.ToString(in.Bucket) != listedName {
		return c.Client.HeadObject(ctx, in, opts...)
	}
	i, ok := listedIndex(aws.ToString(in.Key))
	if !ok || i >= c.n {
		return nil, &types.NotFound{}
	}
	out := &s3.HeadObjectOutput{ContentLength: aws.Int64(listedSize(i)), ETag: aws.String(fmt.Sprintf(`"%032x"`, i)), LastModified: aws.Time(time.Unix(1.7e9, 0).UTC())}
	if listedStores(i) && in.ChecksumMode == types.ChecksumModeEnabled {
		out.ChecksumCRC32, out.ChecksumType = aws.String(s3part.CRCBase64(crc32.ChecksumIEEE(listedBody(i)))), types.ChecksumTypeFullObject
	}
	return out, nil
}

func (c *listedBucket) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.count("GetObject", aws.ToString(in.Bucket))
	if aws.ToString(in.Bucket) != listedName {
		return c.Client.GetObject(ctx, in, opts...)
	}
	return nil, fmt.Errorf("GetObject %s: the planner and the lookups need no source's bytes here", aws.ToString(in.Key))
}

// UploadPartCopy from a generated object uploads its bytes (the range
// asked for) as the part, as S3 copies them, and answers the part's CRC-32.
func (c *listedBucket) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, opts ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	source, _ := url.PathUnescape(strings.SplitN(aws.ToString(in.CopySource), "?", 2)[0])
	bucket, key, _ := strings.Cut(source, "/")
	c.count("UploadPartCopy", bucket)
	if bucket != listedName {
		return c.Client.UploadPartCopy(ctx, in, opts...)
	}
	i, ok := listedIndex(key)
	if !ok || i >= c.n {
		return nil, &types.NoSuchKey{}
	}
	body := listedBody(i)
	if r := aws.ToString(in.CopySourceRange); r != "" {
		var from, to int
		if _, err := fmt.Sscanf(r, "bytes=%d-%d", &from, &to); err != nil || to >= len(body) || from > to {
			return nil, fmt.Errorf("UploadPartCopy %s: range %q of %d bytes", key, r, len(body))
		}
		body = body[from : to+1]
	}
	out, err := c.Client.UploadPart(ctx, &s3.UploadPartInput{Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId, PartNumber: in.PartNumber,
		Body: strings.NewReader(string(body)), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32}, opts...)
	if err != nil {
		return nil, err
	}
	return &s3.UploadPartCopyOutput{CopyPartResult: &types.CopyPartResult{ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}}, nil
}

// The planner's own requests for a listed prefix grow with listing pages
// and parts, never with objects: 100,000 listed objects (sizes around
// 4 KiB, one in three stored without a CRC-32) take the planner handler at
// most two requests more per thousand objects than 10,000 do, and none of
// them names a source object (no HeadObject, GetObject or copy: the
// CRC-32s its layout needs are the read pass's lookups).
func TestPlannerRequestsGrowWithPagesNotListedObjects(t *testing.T) {
	const few, many = 10_000, 100_000
	e := newEnv(t, nil)
	r := e.runner()
	r.Config.DefaultMaxConcurrency = 8
	requests := map[int]int{}
	for _, n := range []int{few, many} {
		counter := s3metrics.New()
		planner := &listedBucket{Client: s3.New(e.s3.Options(), counter.Option()), n: n, counts: map[string]int{}}
		r.S3 = &listedBucket{Client: e.s3, n: n, counts: map[string]int{}}
		pl := &Planner{S3: planner, Config: r.Config, Log: quietLog()}
		req := fmt.Sprintf(`{"source":{"bucket":%q,"prefix":"k/"},"destination":{"bucket":"dst","key":"out/%d.zip"},"options":{"strategy":"stream"}}`, listedName, n)
		job, calls := planAsDeployed(t, pl, r, PlanInput{Request: []byte(req), Execution: fmt.Sprintf("listed-%d", n)})
		requests[n] = planner.answered() + int(counter.Total())
		t.Logf("%d listed objects: %d planner invocations, %d planner requests (listing %v, the rest %v); the read pass's source requests %v",
			n, calls, requests[n], planner.counts, counter.Sorted(), r.S3.(*listedBucket).counts)
		if planner.sourced != 0 {
			t.Errorf("%d listed objects: the planner made %d requests naming a source object", n, planner.sourced)
		}
		entries := plannedEntries(t, e, job)
		if len(entries) != n {
			t.Fatalf("%d entries planned, want %d", len(entries), n)
		}
		for i, pe := range entries {
			if pe.Name != strings.TrimPrefix(listedKey(i), "k/") || pe.Size != listedSize(i) {
				t.Fatalf("entry %d is %q, %d bytes; want %q, %d bytes", i, pe.Name, pe.Size, listedKey(i), listedSize(i))
			}
			if pe.CRC32.Known && pe.CRC32.Sum != crc32.ChecksumIEEE(listedBody(i)) {
				t.Fatalf("entry %q: CRC-32 %08x, its bytes' is %08x", pe.Name, pe.CRC32.Sum, crc32.ChecksumIEEE(listedBody(i)))
			}
		}
		if _, err := e.s3.AbortMultipartUpload(t.Context(), &s3.AbortMultipartUploadInput{Bucket: aws.String("dst"), Key: &job.Destination.Key, UploadId: &job.UploadID}); err != nil {
			t.Fatal(err)
		}
	}
	if grew, pages := requests[many]-requests[few], 2*(many-few)/1000; grew > pages {
		t.Errorf("the planner made %d requests for %d listed objects and %d for %d: %d more, over two per thousand objects (%d)",
			requests[few], few, requests[many], many, grew, pages)
	}
}
