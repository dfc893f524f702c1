package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// listCounter is the planner's client with its ListObjectsV2 requests
// counted, at once and in all, each held for a round trip's delay so that
// requests sent together overlap as they do against S3.
type listCounter struct {
	*s3.Client
	delay          time.Duration
	now, most, all atomic.Int64
}

func (c *listCounter) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	c.all.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(c.delay)
	return c.Client.ListObjectsV2(ctx, in, opts...)
}

// TestPlannerListsInParallel: the planner (what `s3zip plan` and `create`
// and the planner Lambda run) lists a source prefix of several pages with
// many ListObjectsV2 requests in flight, and its entries are exactly those
// of one request at a time, for folders in folders, a flat folder of
// numbered keys, unicode and '/'-runs (versitygw stores a//b as a/b, as
// POSIX paths are: what it lists is compared; s3prefix's fake server keeps
// them), the whole bucket and a prefix with no keys.
func TestPlannerListsInParallel(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "src")
	objects := map[string][]byte{}
	for i := range 1500 {
		objects[fmt.Sprintf("nest/%02d/%02d/%d.log", i/150, i/10%15, i%10)] = []byte{byte(i)}
		objects[fmt.Sprintf("flat/%07d", i)] = []byte{byte(i), 1}
	}
	for i, k := range []string{"é", "日本/x", "🙂", "a//b", "a///c", "a/b", "a.b", "a-b", "a~"} {
		for j := range 120 {
			objects[fmt.Sprintf("uni/%s%d", k, j)] = []byte{byte(i), byte(j), 2}
		}
	}
	srv.PutObjects(t, "src", objects)
	client := srv.Client(t)
	entries := func(t *testing.T, prefix string, concurrency int) ([]plan.Entry, *listCounter, error) {
		c := &listCounter{Client: client, delay: 5 * time.Millisecond}
		pl := &Planner{S3: c, Config: Config{WorkBucket: "work", ListConcurrency: concurrency}}
		got, _, err := pl.Entries(t.Context(), request("auto", prefix, "out.zip", ""))
		return got, c, err
	}
	for _, tc := range []struct {
		prefix   string
		parallel bool // pages enough that one request at a time would be slow
	}{
		{"nest/", true}, {"flat/", true}, {"uni/", false}, {"", true}, {"none/", false},
	} {
		t.Run("prefix="+tc.prefix, func(t *testing.T) {
			want, one, wantErr := entries(t, tc.prefix, 1)
			got, many, err := entries(t, tc.prefix, 0) // the default
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("listing in parallel: error %v; one request at a time: %v", err, wantErr)
			}
			if len(got) != len(want) {
				t.Fatalf("%d entries listed in parallel, %d one request at a time", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("entry %d listed in parallel is %+v; one request at a time: %+v", i, got[i], want[i])
				}
			}
			t.Logf("%d entries: %d requests one at a time; %d requests, at most %d in flight by default", len(want), one.all.Load(), many.all.Load(), many.most.Load())
			if one.most.Load() != 1 {
				t.Errorf("LIST_CONCURRENCY 1 had %d requests in flight at once", one.most.Load())
			}
			if tc.parallel && many.most.Load() < 3 {
				t.Errorf("the planner listed %d entries (%d pages) with at most %d ListObjectsV2 in flight: listing is one paginator, not parallel",
					len(want), one.all.Load(), many.most.Load())
			}
		})
	}
}

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

// FuzzPlannerManifest runs the planner over an arbitrary manifest, against
// an in-memory S3 in which every key under p/ exists (size and CRC-32
// derived from the key; keys containing "gone" do not). The planner never
// panics, refuses only with failure.RequestError or failure.LimitError, and never writes
// before it refuses. Seeds: testdata/fuzz/FuzzPlannerManifest.
func FuzzPlannerManifest(f *testing.F) {
	f.Add([]byte("key,size\np/a.txt,5\np/b.txt\n"))
	f.Add([]byte(`{"key":"p/x","name":"dir/x","crc32":"00000000"}` + "\n"))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		s := &fakePlannerS3{manifest: manifest}
		pl := &Planner{S3: s, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Config: Config{
			WorkBucket: "work", ControlBucket: "ctl", AllowedSources: []string{"src/p/"},
			AllowedDestinations: []string{"dst/out/"}, MaxEntries: 2000, MaxArchiveBytes: 1 << 40, HeadConcurrency: 4,
		}}
		req := []byte(`{"source":{"manifest":{"bucket":"ctl","key":"m.csv"},"bucket":"src"},"destination":{"bucket":"dst","key":"out/a.zip"},"options":{"duplicates":"suffix"}}`)
		job, err := pl.Plan(context.Background(), PlanInput{Request: req, Execution: "fuzz"})
		if err != nil {
			var re *failure.RequestError
			var le *failure.LimitError
			if !errors.As(err, &re) && !errors.As(err, &le) {
				t.Fatalf("refused with %T: %v", err, err)
			}
			if len(s.writes) > 0 {
				t.Fatalf("wrote %q before refusing: %v", s.writes, err)
			}
			return
		}
		// Plan files under the execution's work prefix and one upload, nothing else.
		uploads := 0
		for _, w := range s.writes {
			switch {
			case strings.HasPrefix(w, "CreateMultipartUpload s3://dst/out/"):
				uploads++
			case strings.HasPrefix(w, "PutObject s3://work/s3zip-work/fuzz/"):
			default:
				t.Fatalf("accepted, and wrote %q outside the work prefix and the destination", w)
			}
		}
		if uploads != 1 || job.UploadID == "" {
			t.Fatalf("accepted, but wrote %q", s.writes)
		}
	})
}

// fakeSize and fakeCRC are the size and CRC-32 of the fake object key.
func fakeSize(key string) int64 { return int64(len(key) % 13) }

func fakeCRC(key string) uint32 {
	return crc32.ChecksumIEEE(bytes.Repeat([]byte{byte(len(key))}, int(fakeSize(key))))
}

type fakePlannerS3 struct {
	S3       // what the test does not call: nil
	manifest []byte
	mu       sync.Mutex
	writes   []string
}

func (s *fakePlannerS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b, k := aws.ToString(in.Bucket), aws.ToString(in.Key)
	var body []byte
	switch {
	case b == "ctl" && k == "m.csv":
		body = s.manifest
	case b == "src" && strings.HasPrefix(k, "p/") && !strings.Contains(k, "gone"):
		body = bytes.Repeat([]byte{byte(len(k))}, int(fakeSize(k)))
	default:
		return nil, &types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body)))}, nil
}

func (s *fakePlannerS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	b, k := aws.ToString(in.Bucket), aws.ToString(in.Key)
	if b != "src" || !strings.HasPrefix(k, "p/") || strings.Contains(k, "gone") {
		return nil, &types.NotFound{}
	}
	crc := fakeCRC(k)
	return &s3.HeadObjectOutput{
		ContentLength: aws.Int64(fakeSize(k)), ETag: aws.String(`"e"`),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc)), ChecksumType: types.ChecksumTypeFullObject,
	}, nil
}

func (s *fakePlannerS3) record(op, bucket, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, fmt.Sprintf("%s s3://%s/%s", op, bucket, key))
}

func (s *fakePlannerS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	s.record("PutObject", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return &s3.PutObjectOutput{}, nil
}

func (s *fakePlannerS3) ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return &s3.ListObjectsV2Output{}, nil
}

func (s *fakePlannerS3) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	s.record("CreateMultipartUpload", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("u1")}, nil
}

// The rest of the fake: a planner over it never needs them (every source
// has a stored CRC-32, nothing is compressed, no create fails), so each is
// an error, or a recorded write.
var errFakeUnused = errors.New("fakePlannerS3: not expected in this test")

func (s *fakePlannerS3) DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return &s3.ListMultipartUploadsOutput{}, nil
}

func (s *fakePlannerS3) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	s.record("AbortMultipartUpload", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return &s3.AbortMultipartUploadOutput{}, nil
}
