package create

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/plan"
)

// fakeS3 is a small hand-written S3 for the worker's error paths: objects
// in memory (ranged, If-Match), uploads recorded, failures injected per
// operation.
type fakeS3 struct {
	S3      // what the tests do not call: nil
	mu      sync.Mutex
	objects map[string][]byte // bucket/key → bytes
	etags   map[string]string
	parts   map[int32][]byte // part number → bytes uploaded (last wins)
	calls   map[string]int
	fail    func(op string, call int) error
	// copyCRC makes UploadPartCopy answer with the copied bytes' CRC-32, as
	// S3 does into an upload created with CRC-32.
	copyCRC bool
	// stored makes UploadPartCopy of these sources (bucket/key) answer with
	// the checksum the source is stored with, as versitygw 1.8 does.
	stored map[string]string
	// noCopyResult makes UploadPartCopy answer without a CopyPartResult.
	noCopyResult bool
	// served counts the source bytes GetObject returned, by bucket/key.
	served map[string]int64
	// sums are the CRC-32 and length of every part uploaded; parts over
	// keepPart bytes are hashed as they arrive, not kept.
	sums map[int32][2]int64
	// probed counts the copies into a CRC probe's upload.
	probed int
	// headCRC makes HeadObject answer with each object's CRC-32, as S3 does
	// for an object stored with one (FULL_OBJECT).
	headCRC bool
}

const keepPart = 32 << 20

func newFakeS3() *fakeS3 {
	return &fakeS3{objects: map[string][]byte{}, etags: map[string]string{}, parts: map[int32][]byte{}, calls: map[string]int{},
		stored: map[string]string{}, served: map[string]int64{}, sums: map[int32][2]int64{}}
}

func (f *fakeS3) put(bucket, key string, b []byte) {
	f.objects[bucket+"/"+key] = b
	f.etags[bucket+"/"+key] = fmt.Sprintf(`"%x"`, len(b))
}

func (f *fakeS3) call(op string) error {
	f.mu.Lock()
	f.calls[op]++
	n := f.calls[op]
	f.mu.Unlock()
	if f.fail != nil {
		return f.fail(op, n)
	}
	return nil
}

func apiError(code string) error { return &smithy.GenericAPIError{Code: code, Message: code} }

func parseRange(r string, size int) (int, int) {
	a, b, _ := strings.Cut(strings.TrimPrefix(r, "bytes="), "-")
	from, _ := strconv.Atoi(a)
	to, _ := strconv.Atoi(b)
	return from, min(to+1, size)
}

func (f *fakeS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := f.call("GetObject"); err != nil {
		return nil, err
	}
	k := *in.Bucket + "/" + *in.Key
	b, ok := f.objects[k]
	if !ok {
		return nil, apiError("NoSuchKey")
	}
	if in.IfMatch != nil && *in.IfMatch != f.etags[k] {
		return nil, apiError("PreconditionFailed")
	}
	if in.Range != nil {
		from, to := parseRange(*in.Range, len(b))
		b = b[from:to]
	}
	f.mu.Lock()
	f.served[k] += int64(len(b))
	f.mu.Unlock()
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b)), ContentLength: aws.Int64(int64(len(b)))}, nil
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := f.call("PutObject"); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.put(*in.Bucket, *in.Key, b)
	f.mu.Unlock()
	return &s3.PutObjectOutput{ETag: aws.String(f.etags[*in.Bucket+"/"+*in.Key])}, nil
}

func (f *fakeS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if err := f.call("UploadPart"); err != nil {
		return nil, err
	}
	h := crc32.NewIEEE()
	var kept bytes.Buffer
	w := io.Writer(h)
	if aws.ToInt64(in.ContentLength) <= keepPart {
		w = io.MultiWriter(h, &kept)
	}
	n, err := io.Copy(w, in.Body)
	if err != nil {
		return nil, err
	}
	if in.ChecksumCRC32 != nil && *in.ChecksumCRC32 != s3part.CRCBase64(h.Sum32()) {
		return nil, apiError("BadDigest")
	}
	f.mu.Lock()
	f.parts[*in.PartNumber] = kept.Bytes()
	f.sums[*in.PartNumber] = [2]int64{int64(h.Sum32()), n}
	f.mu.Unlock()
	return &s3.UploadPartOutput{ETag: aws.String(fmt.Sprintf(`"p%d"`, *in.PartNumber)), ChecksumCRC32: in.ChecksumCRC32}, nil
}

func (f *fakeS3) UploadPartCopy(_ context.Context, in *s3.UploadPartCopyInput, _ ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	if err := f.call("UploadPartCopy"); err != nil {
		return nil, err
	}
	k := *in.CopySource
	if in.CopySourceIfMatch != nil && *in.CopySourceIfMatch != f.etags[k] {
		return nil, apiError("PreconditionFailed")
	}
	from, to := 0, len(f.objects[k])
	if in.CopySourceRange != nil {
		from, to = parseRange(*in.CopySourceRange, len(f.objects[k]))
	}
	f.mu.Lock()
	if aws.ToString(in.UploadId) == probeUploadID {
		f.probed++
	} else {
		f.parts[*in.PartNumber] = f.objects[k][from:to]
	}
	f.mu.Unlock()
	if f.noCopyResult {
		return &s3.UploadPartCopyOutput{}, nil
	}
	out := &s3.UploadPartCopyOutput{CopyPartResult: &types.CopyPartResult{ETag: aws.String(`"c"`)}}
	if v, ok := f.stored[k]; ok {
		out.CopyPartResult.ChecksumCRC32 = aws.String(v)
	} else if f.copyCRC {
		out.CopyPartResult.ChecksumCRC32 = aws.String(s3part.CRCBase64(crcOf(f.objects[k][from:to])))
	}
	return out, nil
}

func (f *fakeS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := f.call("HeadObject"); err != nil {
		return nil, err
	}
	k := *in.Bucket + "/" + *in.Key
	f.mu.Lock()
	f.calls["HeadObject "+k]++ // which objects were asked, for tests that care
	f.mu.Unlock()
	b, ok := f.objects[k]
	if !ok {
		return nil, apiError("NotFound")
	}
	if in.IfMatch != nil && *in.IfMatch != f.etags[k] {
		return nil, apiError("PreconditionFailed")
	}
	out := &s3.HeadObjectOutput{ContentLength: aws.Int64(int64(len(b))), ETag: aws.String(f.etags[k])}
	if f.headCRC {
		out.ChecksumCRC32, out.ChecksumType = aws.String(s3part.CRCBase64(crcOf(b))), types.ChecksumTypeFullObject
	}
	return out, nil
}

// probeUploadID is the fake's upload for CRC probes, whose parts are only counted.
const probeUploadID = "probe"

func (f *fakeS3) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	if strings.Contains(aws.ToString(in.Key), "probe") {
		return &s3.CreateMultipartUploadOutput{UploadId: aws.String(probeUploadID)}, nil
	}
	return nil, errors.New("fakeS3: chains are not faked")
}
func (f *fakeS3) CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return nil, errors.New("fakeS3: chains are not faked")
}
func (f *fakeS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	return &s3.AbortMultipartUploadOutput{}, nil
}

// batch plans entries with duo and returns the fake holding the sources and
// the plan, and the batch of every worker part.
func batch(t *testing.T, sizes ...int64) (*fakeS3, BatchInput) {
	t.Helper()
	return batchCRC(t, true, sizes...)
}

// batchCRC is batch with the entries' CRCs in the plan or not.
func batchCRC(t *testing.T, known bool, sizes ...int64) (*fakeS3, BatchInput) {
	t.Helper()
	f := newFakeS3()
	var entries []plan.Entry
	for i, size := range sizes {
		key := fmt.Sprintf("in/%d", i)
		b := bytes.Repeat([]byte{byte(i + 1)}, int(size))
		f.put("src", key, b)
		e := plan.Entry{Name: key, Source: plan.Source{Bucket: "src", Key: key, ETag: f.etags["src/"+key]}, Size: size, ModTime: time.Unix(1700000000, 0)}
		if known {
			e.CRC32 = plan.KnownCRC(crcOf(b))
		}
		entries = append(entries, e)
	}
	p, err := plan.Make(entries, plan.Options{Strategy: plan.StrategyDuo})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f.put("work", "w/entries.jsonl", enc.Entries)
	jobs, err := plan.DecodeParts(bytes.NewReader(enc.Parts))
	if err != nil {
		t.Fatal(err)
	}
	var in BatchInput
	in.Items = jobs
	in.BatchInput.Job = Job{Execution: "x", WorkBucket: "work", WorkPrefix: "w/", EntriesKey: "w/entries.jsonl", UploadID: "u", Destination: Destination{Bucket: "dst", Key: "a.zip"}}
	return f, in
}

func crcOf(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

func TestWorkerThrottledIsTransient(t *testing.T) {
	f, in := batch(t, 6*plan.MiB, 2*plan.MiB, 7*plan.MiB)
	f.fail = func(op string, _ int) error {
		if op == "UploadPart" {
			return apiError("SlowDown")
		}
		return nil
	}
	_, err := (&Worker{S3: f}).Handle(context.Background(), in)
	if !Retryable(err) || ErrorType(err) != "TransientError" {
		t.Fatalf("err = %v (type %s), want a retryable TransientError", err, ErrorType(err))
	}
}

// A part that fails twice then succeeds: the batch is retried (as the
// Map's Retry does) and the parts uploaded are the same bytes every time.
func TestWorkerPartFailsTwiceThenSucceeds(t *testing.T) {
	f, in := batch(t, 6*plan.MiB, 2*plan.MiB, 7*plan.MiB, 1000)
	f.fail = func(op string, n int) error {
		if op == "UploadPartCopy" && n <= 2 {
			return apiError("InternalError")
		}
		return nil
	}
	w := &Worker{S3: f}
	var first map[int32][]byte
	for attempt := 1; attempt <= 3; attempt++ {
		out, err := w.Handle(context.Background(), in)
		if attempt < 3 {
			if !Retryable(err) {
				t.Fatalf("attempt %d: err = %v, want retryable", attempt, err)
			}
			if first == nil {
				first = map[int32][]byte{}
				for k, v := range f.parts {
					first[k] = v
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("attempt 3: %v", err)
		}
		parts := 0
		for _, it := range in.Items {
			parts += 1 + len(it.Carried)
		}
		if len(out.Parts) != parts {
			t.Fatalf("%d results for %d parts", len(out.Parts), parts)
		}
	}
	for k, v := range first {
		if !bytes.Equal(f.parts[k], v) {
			t.Errorf("part %d differs between attempts", k)
		}
	}
}

func TestWorkerStopsBeforeTheDeadline(t *testing.T) {
	f, in := batch(t, 6*plan.MiB, 2*plan.MiB, 7*plan.MiB, 3*plan.MiB)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	// The clock: the first part starts with time to spare, then the
	// deadline is 10 s away, inside the 30 s margin.
	var mu sync.Mutex
	calls := 0
	deadline, _ := ctx.Deadline()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return deadline.Add(-time.Hour)
		}
		return deadline.Add(-10 * time.Second)
	}
	w := &Worker{S3: f, Now: now, Config: Config{PartConcurrency: 1}}
	_, err := w.Handle(ctx, in)
	var de *DeadlineError
	if !errors.As(err, &de) || de.Done != 1 || de.Left != len(in.Items)-1 || !Retryable(err) {
		t.Fatalf("err = %v, want DeadlineError with 1 part done and %d left", err, len(in.Items)-1)
	}
}

func TestWorkerSourceChangedIsNotRetried(t *testing.T) {
	f, in := batch(t, 6*plan.MiB, 2*plan.MiB)
	f.put("src", "in/0", bytes.Repeat([]byte{9}, 6*plan.MiB+1)) // new ETag
	_, err := (&Worker{S3: f}).Handle(context.Background(), in)
	var sc *failure.SourceChangedError
	if !errors.As(err, &sc) || Retryable(err) || ErrorType(err) != "SourceChangedError" {
		t.Fatalf("err = %v, want a failure.SourceChangedError, not retried", err)
	}
}

// A part that ends with the header of an object copied whole carries the
// copy: the worker copies first and writes the CRC-32 S3 answers with into
// the header, without asking for it (no HEAD, no GET of the object); when
// the answer has none, it asks and reads instead.
func TestWorkerCarriedCopyGivesTheCRC(t *testing.T) {
	for _, answers := range []bool{true, false} {
		f, in := batchCRC(t, false, 6*plan.MiB, 7*plan.MiB, 1000)
		f.copyCRC = answers
		if len(in.Items) != 1 || len(in.Items[0].Carried) != 1 {
			t.Fatalf("items %+v: want one upload part carrying one copy", in.Items)
		}
		out, err := (&Worker{S3: f}).Handle(context.Background(), in)
		if err != nil {
			t.Fatalf("answers %v: %v", answers, err)
		}
		c := in.Items[0].Carried[0]
		want := crcOf(f.objects["src/"+c.Source.Key])
		if got := out.Parts[0].CRCs[strconv.Itoa(int(c.First))]; got != fmt.Sprintf("%08x", want) {
			t.Errorf("answers %v: part %d reports CRC %q for the copied entry, want %08x", answers, out.Parts[0].Part, got, want)
		}
		// The uploaded part ends with the copied entry's local header.
		entries, err := plan.DecodeEntries(bytes.NewReader(f.objects["work/w/entries.jsonl"]))
		if err != nil {
			t.Fatal(err)
		}
		e := entries[c.First]
		body := f.parts[int32(in.Items[0].Number)]
		if at := e.Offset - in.Items[0].Start + 14; int64(len(body)) < at+4 || binary.LittleEndian.Uint32(body[at:]) != want {
			t.Errorf("answers %v: the header before the copy does not carry CRC %08x", answers, want)
		}
		asked := f.calls["HeadObject src/"+c.Source.Key] > 0
		if asked == answers {
			t.Errorf("answers %v: HeadObject calls of the copied object %d", answers, f.calls["HeadObject src/"+c.Source.Key])
		}
		if len(out.Parts) != 2 || out.Parts[1].Part != c.Number {
			t.Errorf("answers %v: results %+v, want the part and the carried copy %d", answers, out.Parts, c.Number)
		}
	}
}

// An UploadPartCopy answer without a CopyPartResult is an error that names
// the copy, in every place that reads one (worker copies, chain rounds and
// the chain's final copy, the planner's CRC probe: all through copied).
func TestCopyAnswerWithoutResult(t *testing.T) {
	for _, out := range []*s3.UploadPartCopyOutput{nil, {}} {
		if _, _, err := copied(out, "src", "k"); err == nil || !strings.Contains(err.Error(), "s3://src/k") {
			t.Errorf("copied(%v) = %v, want an error naming s3://src/k", out, err)
		}
	}
	etag, crc, err := copied(&s3.UploadPartCopyOutput{CopyPartResult: &types.CopyPartResult{ETag: aws.String(`"e"`), ChecksumCRC32: aws.String("AAAAAA==")}}, "src", "k")
	if err != nil || etag != `"e"` || crc != "AAAAAA==" {
		t.Errorf("copied = %q %q %v", etag, crc, err)
	}

	f, in := batch(t, 6*plan.MiB, 7*plan.MiB, 1000)
	f.noCopyResult = true
	_, err = (&Worker{S3: f}).Handle(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "no CopyPartResult") {
		t.Fatalf("worker over a copy answered without a result: %v, want an error saying so", err)
	}
}

// inFlight counts the requests of one operation (UploadPartCopy or
// UploadPart) in flight at once. Each waits, up to hold, for want of them to
// be in flight, so that a worker keeping fewer shows it by its most, not by
// luck of timing.
type inFlight struct {
	*fakeS3
	op   string
	want int
	hold time.Duration

	mu      sync.Mutex
	now     int
	most    int
	reached chan struct{}
	closed  bool
}

func (c *inFlight) enter(op string) func() {
	if op != c.op {
		return func() {}
	}
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	if c.now == c.want && !c.closed {
		close(c.reached)
		c.closed = true
	}
	c.mu.Unlock()
	select {
	case <-c.reached:
	case <-time.After(c.hold):
	}
	return func() { c.mu.Lock(); c.now--; c.mu.Unlock() }
}

func (c *inFlight) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, opts ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	defer c.enter("UploadPartCopy")()
	return c.fakeS3.UploadPartCopy(ctx, in, opts...)
}

func (c *inFlight) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	defer c.enter("UploadPart")()
	return c.fakeS3.UploadPart(ctx, in, opts...)
}

// The worker builds as many parts at once as the job says (the plan's
// Fit.InFlight, which its prediction assumed), not the deployment's
// PART_CONCURRENCY, which bounds only the upload parts among them (each
// holds its bytes and a fan-out of GETs).
func TestWorkerKeepsTheJobsPartsInFlight(t *testing.T) {
	sizes := make([]int64, 16)
	for i := range sizes {
		sizes[i] = 11 * plan.MiB // a streamed prefix and a carried copy each
	}
	f, in := batch(t, sizes...)
	var copies, uploads []plan.PartJob
	for _, it := range in.Items {
		copies = append(copies, it.Carried...)
		it.Carried, it.Carry = nil, 0
		uploads = append(uploads, it)
	}
	if len(copies) < 12 {
		t.Fatalf("the batch carries %d copies; the test needs at least 12", len(copies))
	}
	for _, c := range []struct {
		name, op string
		items    []plan.PartJob
		want     int
	}{
		{"copy-parts", "UploadPartCopy", copies, 12},
		{"upload-parts", "UploadPart", uploads, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			in.Items = c.items
			in.BatchInput.Job.PartsInFlight = 12
			counter := &inFlight{fakeS3: f, op: c.op, want: c.want, hold: 300 * time.Millisecond, reached: make(chan struct{})}
			w := &Worker{S3: counter, Config: Config{PartConcurrency: 2}}
			if _, err := w.Handle(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if counter.most != c.want {
				t.Errorf("at most %d %s parts in flight at once, want %d: the job says 12 parts, PART_CONCURRENCY 2 upload parts", counter.most, c.name, c.want)
			}
		})
	}
}
