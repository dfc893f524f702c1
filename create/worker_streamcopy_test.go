package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/plan"
)

// A copy whose answer cannot be the part's checksum (versitygw answers with
// the checksum the source is stored with: a composite of its parts, or the
// whole object's CRC-32 for a range) is uploaded again, streamed, however
// far the range is over the worker's memory budget: the same part number,
// the right bytes and CRC-32, and memory that does not grow with the range.
func TestWorkerStreamsAnUntrustedCopyOverTheBudget(t *testing.T) {
	const budget = 8 * plan.MiB
	for _, tc := range []struct {
		name string
		// sizes of the sources; the one at index big is copied
		sizes []int64
		big   int
		// crcKnown: the plan has the sources' CRC-32s (stored with them)
		crcKnown bool
		// answer is what the server says for the copy, from the object's bytes
		answer func(object []byte) string
		// wantRead is the most source bytes read, as a multiple of the range
		// (besides the start of a tail)
		wantRead float64
	}{
		{name: "composite-whole-copy", sizes: []int64{6 * plan.MiB, 96 * plan.MiB, 1000}, big: 1,
			answer: func([]byte) string { return "qCjfSA==-12" }, wantRead: 2},
		{name: "composite-tail-copy", sizes: []int64{1000, 96 * plan.MiB}, big: 1,
			answer: func([]byte) string { return "qCjfSA==-12" }, wantRead: 2},
		// The plan knows the CRC-32 (stored with the object): nothing is
		// read to learn the range's, or only the start before a tail.
		{name: "crc-known-whole-copy", sizes: []int64{6 * plan.MiB, 96 * plan.MiB, 1000}, big: 1, crcKnown: true,
			answer: func(b []byte) string { return "AAAAAA==-2" }, wantRead: 1},
		{name: "full-object-crc-tail-copy", sizes: []int64{1000, 96 * plan.MiB}, big: 1, crcKnown: true,
			answer: func(b []byte) string { return s3part.CRCBase64(crcOf(b)) }, wantRead: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, in := batchCRC(t, tc.crcKnown, tc.sizes...)
			f.copyCRC = true
			key := fmt.Sprintf("src/in/%d", tc.big)
			f.stored[key] = tc.answer(f.objects[key])
			var copy *plan.PartJob
			for i := range in.Items {
				for k := range in.Items[i].Carried {
					if c := &in.Items[i].Carried[k]; c.Source.Key == fmt.Sprintf("in/%d", tc.big) {
						copy = c
					}
				}
			}
			if copy == nil || copy.Size() <= budget {
				t.Fatalf("plan %+v: want a carried copy of in/%d over %d bytes", in.Items, tc.big, budget)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			out, err := (&Worker{S3: f, Config: Config{MemoryBudget: budget}}).Handle(context.Background(), in)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			src := f.objects[key]
			want := src[copy.SourceRange[0]:copy.SourceRange[1]]
			if got := f.sums[int32(copy.Number)]; got != [2]int64{int64(crcOf(want)), int64(len(want))} {
				t.Errorf("part %d uploaded with CRC %08x, %d bytes; want %08x, %d bytes", copy.Number, got[0], got[1], crcOf(want), len(want))
			}
			var res *PartResult
			for i := range out.Parts {
				if out.Parts[i].Part == copy.Number {
					res = &out.Parts[i]
				}
			}
			if res == nil || res.ChecksumCRC32 != s3part.CRCBase64(crcOf(want)) || res.StreamedBytes < int64(len(want)) {
				t.Errorf("result for part %d: %+v, want checksum %s and the range streamed", copy.Number, res, s3part.CRCBase64(crcOf(want)))
			}
			// The entry's CRC-32 in the header part comes out right too.
			if crc := out.Parts[0].CRCs[strconv.Itoa(int(copy.First))]; !tc.crcKnown && crc != fmt.Sprintf("%08x", crcOf(src)) {
				t.Errorf("entry %d: CRC %q reported, want %08x", copy.First, crc, crcOf(src))
			}
			// Holding the range would allocate at least its size; what is
			// allocated is the part before it (6 MiB: the fake keeps what it
			// is sent, and a piped part that the fake, like versitygw, cannot
			// verify is sent again assembled) and buffers, about twice as
			// much under the race detector.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(want))*2/3 {
				t.Errorf("%d bytes allocated to stream a %d-byte range, want under two thirds of it", alloc, len(want))
			}
			// The part before a tail streams the object's start, and a known
			// CRC-32 is turned into the tail's by reading that start again.
			start := copy.SourceRange[0]
			if max := int64(tc.wantRead*float64(len(want))) + 2*start; f.served[key] > max {
				t.Errorf("read %d bytes of the source, want at most %.0f× the %d-byte range and twice its %d-byte start", f.served[key], tc.wantRead, len(want), start)
			}
			t.Logf("part %d: %d bytes, source bytes read %d (%.2f×), allocated %d", copy.Number, len(want), f.served[key],
				float64(f.served[key])/float64(len(want)), after.TotalAlloc-before.TotalAlloc)
		})
	}
}

// The SDK rewinds a request body to retry it: a streamed part's body reads
// the same bytes again after a seek, with a new GET from where it seeks to,
// and a short body is an error, not a short part.
func TestRangeReaderRewindsAndChecksLength(t *testing.T) {
	f := newFakeS3()
	src := bytes.Repeat([]byte("0123456789"), 100_000)
	f.put("src", "k", src)
	ref := &sourceRef{Bucket: "src", Key: "k", ETag: f.etags["src/k"]}
	r := newRangeReader(context.Background(), f, ref, 1000, 900_000)
	half := make([]byte, 300_000)
	if _, err := io.ReadFull(r, half); err != nil {
		t.Fatal(err)
	}
	if pos, err := r.Seek(0, io.SeekStart); err != nil || pos != 0 {
		t.Fatalf("seek to start: %d, %v", pos, err)
	}
	all, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(all, src[1000:900_000]) {
		t.Fatalf("after a rewind read %d bytes (err %v), want bytes 1000-899999 of the source", len(all), err)
	}
	if f.calls["GetObject"] != 2 {
		t.Errorf("%d GETs, want 2 (one per attempt)", f.calls["GetObject"])
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Error("seek before the range: no error")
	}

	// The source shrank under the reader (no If-Match on this fake path).
	f.objects["src/k"] = src[:500_000]
	r = newRangeReader(context.Background(), f, &sourceRef{Bucket: "src", Key: "k"}, 1000, 900_000)
	if _, err := io.Copy(io.Discard, r); err == nil || !strings.Contains(err.Error(), "bytes came back") {
		t.Errorf("short source: err %v, want one saying how many bytes came back", err)
	}
}

// cuttingGetter answers GETs from the fake, the first cuts of them broken
// off after 1,000 bytes as s3rate abandons a stalled body.
type cuttingGetter struct {
	*fakeS3
	cuts   int
	ranges []string
}

func (g *cuttingGetter) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	g.ranges = append(g.ranges, aws.ToString(in.Range))
	out, err := g.fakeS3.GetObject(ctx, in, opts...)
	if err == nil && g.cuts > 0 {
		g.cuts--
		out.Body = io.NopCloser(io.MultiReader(io.LimitReader(out.Body, 1000), errReader{s3rate.ErrStalled}))
	}
	return out, err
}

// A streamed part's source that stalls is asked for again from the byte it
// reached, not failed: the upload it feeds goes on with the same bytes.
// One that keeps stalling fails after bodyAttempts GETs.
func TestRangeReaderResumesAStalledBody(t *testing.T) {
	f := newFakeS3()
	src := bytes.Repeat([]byte("0123456789"), 100_000)
	f.put("src", "k", src)
	ref := &sourceRef{Bucket: "src", Key: "k", ETag: f.etags["src/k"]}
	g := &cuttingGetter{fakeS3: f, cuts: 2}
	all, err := io.ReadAll(newRangeReader(context.Background(), g, ref, 1000, 900_000))
	if err != nil || !bytes.Equal(all, src[1000:900_000]) {
		t.Fatalf("read %d bytes (err %v), want bytes 1000-899999 of the source", len(all), err)
	}
	if want := []string{"bytes=1000-899999", "bytes=2000-899999", "bytes=3000-899999"}; !slices.Equal(g.ranges, want) {
		t.Errorf("GETs %q, want %q", g.ranges, want)
	}

	g = &cuttingGetter{fakeS3: f, cuts: 100}
	_, err = io.ReadAll(newRangeReader(context.Background(), g, ref, 1000, 900_000))
	if !errors.Is(err, s3rate.ErrStalled) || len(g.ranges) != bodyAttempts {
		t.Errorf("a source that keeps stalling: %v after %d GETs, want ErrStalled after %d", err, len(g.ranges), bodyAttempts)
	}
}
