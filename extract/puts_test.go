package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/zipread"
)

// putRecorder is a Client whose archive is memObject and whose PutObject
// records what was put and how many PUTs were in flight at once; failKey's
// put fails. Every other method is left nil: a read job must not call it.
type putRecorder struct {
	memObject
	Client
	failKey string

	mu             sync.Mutex
	put            map[string][]byte
	inFlight, most atomic.Int64
	// failed is set once failKey's PUT has failed; startedAfter counts the
	// PUTs that began after that.
	failed       atomic.Bool
	startedAfter atomic.Int64
}

func (p *putRecorder) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return p.memObject.HeadObject(ctx, in, o...)
}

func (p *putRecorder) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return p.memObject.GetObject(ctx, in, o...)
}

func (p *putRecorder) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if p.failed.Load() {
		p.startedAfter.Add(1)
	}
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	time.Sleep(2 * time.Millisecond) // a round trip: PUTs that overlap show it
	if aws.ToString(in.Key) == p.failKey {
		p.failed.Store(true)
		return nil, errors.New("put refused")
	}
	b, _ := io.ReadAll(in.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put[aws.ToString(in.Key)] = b
	return &s3.PutObjectOutput{}, nil
}

// readJobOf plans an archive of n small entries, alternately STORED and
// DEFLATEd, into one read job.
func readJobOf(t *testing.T, n int) (memObject, *Extraction, Job, map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	want := map[string][]byte{}
	for i := range n {
		name := fmt.Sprintf("d/%04d.txt", i)
		body := []byte(strings.Repeat(fmt.Sprintf("entry %d ", i), i%50+1))
		e, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: uint16(i%2) * zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		e.Write(body)
		want["out/"+name] = body
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := memObject(buf.Bytes())
	ctx := t.Context()
	a, err := zipread.Open(ctx, m, "b", "k.zip")
	if err != nil {
		t.Fatal(err)
	}
	checked, err := Check(a, "out/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	starts, err := a.DataStarts(ctx, checked.Keep, 4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanJobs(a, "out/", checked, starts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Jobs) != 1 || p.Jobs[0].Kind != KindRead || len(p.Jobs[0].Items) != n {
		t.Fatalf("want one read job of %d entries, planned %d jobs", n, len(p.Jobs))
	}
	ex := &Extraction{DestBucket: "dest", Prefix: "out/"}
	ex.Archive.Bucket, ex.Archive.Key, ex.Archive.ETag, ex.Archive.Size = "b", "k.zip", `"e"`, int64(len(m))
	return m, ex, p.Jobs[0], want
}

// A read job's entries are read in order from one GET and put with PUTs
// that overlap, never more than putsInFlight at once, each with the bytes
// the archive holds.
func TestReadJobOverlapsItsPuts(t *testing.T) {
	m, ex, j, want := readJobOf(t, 300)
	c := &putRecorder{memObject: m, put: map[string][]byte{}}
	x := newExecutor(c, ex)
	if err := x.run(t.Context(), j); err != nil {
		t.Fatal(err)
	}
	if most := c.most.Load(); most < 2 || most > putsInFlight {
		t.Errorf("at most %d PUTs in flight at once; want more than one and no more than %d", most, putsInFlight)
	}
	if c.inFlight.Load() != 0 {
		t.Errorf("%d PUTs still in flight after the job returned", c.inFlight.Load())
	}
	if len(c.put) != len(want) || len(x.sortedWritten()) != len(want) {
		t.Fatalf("put %d objects, reported %d written; want %d", len(c.put), len(x.sortedWritten()), len(want))
	}
	for k, b := range want {
		if !bytes.Equal(c.put[k], b) {
			t.Errorf("%s: put %d bytes (CRC-32 %08x), want %d (%08x)", k, len(c.put[k]), crc32.ChecksumIEEE(c.put[k]), len(b), crc32.ChecksumIEEE(b))
		}
	}
}

// A PUT that fails fails the job with its own error, not the cancellation
// it causes; the job starts no PUT after it and returns only once every
// PUT it started has ended.
func TestReadJobFailsWithTheFailedPut(t *testing.T) {
	m, ex, j, want := readJobOf(t, 300)
	c := &putRecorder{memObject: m, put: map[string][]byte{}, failKey: "out/d/0100.txt"}
	x := newExecutor(c, ex)
	err := x.run(t.Context(), j)
	if err == nil || !strings.Contains(err.Error(), `entry "d/0100.txt": put s3://dest/out/d/0100.txt`) || !strings.Contains(err.Error(), "put refused") {
		t.Fatalf("job error %v, want the failed PUT's", err)
	}
	if c.inFlight.Load() != 0 {
		t.Errorf("%d PUTs still in flight after the job returned", c.inFlight.Load())
	}
	// Only PUTs already given a slot before the failure cancelled the job
	// may begin after it: at most the other putsInFlight-1.
	if after := c.startedAfter.Load(); after > putsInFlight-1 {
		t.Errorf("%d PUTs began after entry 100's failed; at most the %d already holding a slot may", after, putsInFlight-1)
	}
	if len(c.put) == len(want) {
		t.Errorf("every entry was put although entry 100's PUT failed")
	}
	if len(x.sortedWritten()) != len(c.put) {
		t.Errorf("reported %d written, put %d: Abort deletes what is reported", len(x.sortedWritten()), len(c.put))
	}
}
