package faults_test

// Fault-table rows for the read pass (compression, digests): a reader killed
// mid-piece, a source changed between the read and the copy (pinned by its
// ETag), faults on the intermediate writes (the compressed pieces and their
// joins). Each ends with a correct archive or a clean failure, and nothing
// left: no work objects, no multipart uploads.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// logText is n bytes of log lines (DEFLATE shrinks them several times).
func logText(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "2026-11-23T12:%02d:%02d.%03dZ INFO GET /api/v1/items/%d status=%d bytes=%d id=%08x\n",
			rng.IntN(60), rng.IntN(60), rng.IntN(1000), rng.IntN(5000), []int{200, 200, 404, 500}[rng.IntN(4)], rng.IntN(1<<16), rng.Uint32())
	}
	return b.Bytes()[:n]
}

// putCompressible writes a data set for the read pass under prefix: logs cut
// into several pieces, small texts, and a random object that DEFLATE cannot
// shrink (it stays STORED and is copied from its source).
func (w *world) putCompressible(t *testing.T, prefix string) {
	t.Helper()
	put := func(key string, b []byte, opts ...s3test.PutOption) {
		w.srv.PutObject(t, "src", prefix+key, b, opts...)
		w.src[prefix+key] = b
	}
	put("logs/app.log", logText(1, 3*mib+777))
	put("logs/db.log", logText(2, 2*mib), s3test.WithChecksum(s3test.ChecksumCRC32))
	for i := range 3 {
		put(fmt.Sprintf("small/%d.csv", i), logText(uint64(10+i), 20_000*(i+1)))
	}
	put("random.bin", body(77, 6*mib))
}

// compressRequest asks for DEFLATE and SHA-256 digests (no checksums file:
// the table compares entries with the sources).
func compressRequest(prefix, dest string) []byte {
	return []byte(fmt.Sprintf(`{"source":{"bucket":"src","prefix":%q},"destination":{"bucket":"dst","key":%q},"options":{"strategy":"duo","compression":"deflate","digests":["sha256"]}}`, prefix, dest))
}

// compressRunner is the table's runner with pieces of 1 MiB (the logs are
// several pieces each, joined by the layout planner).
func (w *world) compressRunner(c create.S3) *create.Runner {
	r := w.runner(c)
	r.Config.PieceSize = mib
	r.Config.MaxReadsPerBatch = 2
	return r
}

// cutBody is a GetObject body that dies after n bytes, as a killed
// reader's connection does.
type cutBody struct {
	io.ReadCloser
	left   int
	cancel context.CancelFunc
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.cancel()
		return 0, context.Canceled
	}
	n, err := c.ReadCloser.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// killMidPiece hands the reader a client whose source reads stop half-way
// through a piece; its piece writes go through (a piece written before the
// kill is rewritten by the retry).
type killMidPiece struct {
	*s3.Client
	cancel context.CancelFunc
}

func (k *killMidPiece) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := k.Client.GetObject(ctx, in, o...)
	if err == nil && in.Range != nil && out.ContentLength != nil {
		out.Body = &cutBody{ReadCloser: out.Body, left: int(*out.ContentLength / 2), cancel: k.cancel}
	}
	return out, err
}

// TestReaderKilled: every read batch's first attempt dies half-way through
// a piece (after its earlier pieces were written); the Map's retry reads the
// batch again and the archive is right.
func TestReaderKilled(t *testing.T) {
	w := newWorld(t)
	w.putCompressible(t, "z/")
	started := time.Now()
	var mu sync.Mutex
	tries := map[string]int{}
	killed := 0
	r := w.compressRunner(w.direct)
	r.Read = func(ctx context.Context, in create.ReadBatchInput) (*create.ReadBatchResult, error) {
		first := in.Items[0]
		id := fmt.Sprintf("%s#%d", first.Source.Key, first.Piece)
		mu.Lock()
		tries[id]++
		again := tries[id] > 1
		mu.Unlock()
		if again {
			return (&create.Reader{S3: w.direct}).Handle(ctx, in)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, err := (&create.Reader{S3: &killMidPiece{Client: w.direct, cancel: cancel}}).Handle(ctx, in)
		if err == nil {
			t.Errorf("batch %s survived its kill", id)
		}
		mu.Lock()
		killed++
		mu.Unlock()
		// The Map sees a dead reader as a timeout (Sandbox.Timedout) and retries it.
		return nil, &create.DeadlineError{Done: 0, Left: len(in.Items)}
	}
	dest := "out/reader-killed.zip"
	_, err := r.Run(context.Background(), compressRequest("z/", dest), "reader-killed")
	t.Logf("%d read batches killed once", killed)
	if killed < 2 {
		t.Errorf("%d read batches were killed; the case needs several", killed)
	}
	w.judge(t, started, nil, wantArchive, outcome{err: err, dest: dest, want: w.wants("z/")})
}

// TestSourceChangedAroundRead: a source overwritten while the read pass runs
// (its later pieces' GETs carry If-Match) or after it (the STORED entry is
// copied from its source with x-amz-copy-source-if-match): a clean
// SourceChangedError, whatever the read pass had written is gone.
func TestSourceChangedAroundRead(t *testing.T) {
	w := newWorld(t)
	w.putCompressible(t, "z/")
	for _, c := range []struct {
		name, key string
		during    bool // during the read pass, else between it and the copy
	}{
		{"during-read", "z/logs/app.log", true},
		{"between-read-and-copy", "z/random.bin", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := time.Now()
			original := w.src[c.key]
			var once sync.Once
			change := func() { once.Do(func() { w.srv.PutObject(t, "src", c.key, logText(999, len(original))) }) }
			r := w.compressRunner(w.direct)
			r.Config.DefaultMaxConcurrency = 1 // the change lands between two batches
			var batches atomic.Int32
			r.Read = func(ctx context.Context, in create.ReadBatchInput) (*create.ReadBatchResult, error) {
				if c.during && batches.Add(1) == 2 {
					change()
				}
				return (&create.Reader{S3: w.direct}).Handle(ctx, in)
			}
			r.Batch = func(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
				if !c.during {
					change()
				}
				return (&create.Worker{S3: w.direct, Config: config(), Log: quiet}).Handle(ctx, in)
			}
			dest := "out/changed-" + c.name + ".zip"
			_, err := r.Run(context.Background(), compressRequest("z/", dest), "read-changed-"+c.name)
			w.judge(t, started, nil, wantFailure("SourceChangedError"), outcome{err: err, dest: dest})
			w.srv.PutObject(t, "src", c.key, original) // for the next case
		})
	}
}

// failPuts makes a reader's piece writes fail from the n-th on, as a bucket
// that stopped accepting writes would (each attempt of the Map's retry
// fails the same way).
type failPuts struct {
	*s3.Client
	n    int32
	seen *atomic.Int32
}

func (f *failPuts) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if f.seen.Add(1) >= f.n {
		return nil, &stepfn.TransientError{Op: "PutObject " + *in.Key + " (injected)", Err: errors.New("503 SlowDown")}
	}
	return f.Client.PutObject(ctx, in, o...)
}

// TestIntermediateWriteFaults: S3 faults on the read pass's writes (the
// compressed pieces, PutObject) and on their joins (the planner's
// multipart upload of an entry's pieces): retried to a correct archive, or,
// when the writes keep failing, a clean failure with every piece written so
// far deleted.
func TestIntermediateWriteFaults(t *testing.T) {
	w := newWorld(t)
	w.putCompressible(t, "z/")
	for i, c := range []struct {
		name     string
		rules    []fp.Rule
		expected string
	}{
		{"500-503 on piece and join writes", []fp.Rule{{Ops: []fp.Op{fp.PutObject, fp.CreateMultipartUpload, fp.UploadPart, fp.UploadPartCopy, fp.CompleteMultipartUpload},
			Faults: []fp.Fault{fp.InternalError, fp.SlowDown}, Rate: 0.3}}, wantEither},
		{"resets after the server wrote", []fp.Rule{{Ops: []fp.Op{fp.PutObject, fp.UploadPart, fp.CompleteMultipartUpload},
			Faults: []fp.Fault{fp.ResetAfter}, Rate: 0.2}}, wantEither},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := time.Now()
			p, client := w.faults(t, uint64(40+i), c.rules...)
			r := w.compressRunner(client)
			dest := fmt.Sprintf("out/intermediate-%d.zip", i)
			_, err := r.Run(context.Background(), compressRequest("z/", dest), fmt.Sprintf("intermediate-%d", i))
			if n, _ := p.Injected(); n == 0 {
				t.Errorf("no fault was injected: the case proves nothing")
			}
			w.judge(t, started, p, c.expected, outcome{err: err, dest: dest, want: w.wants("z/")})
		})
	}
	t.Run("piece writes keep failing", func(t *testing.T) {
		started := time.Now()
		var seen atomic.Int32
		r := w.compressRunner(w.direct)
		r.Read = func(ctx context.Context, in create.ReadBatchInput) (*create.ReadBatchResult, error) {
			return (&create.Reader{S3: &failPuts{Client: w.direct, n: 3, seen: &seen}}).Handle(ctx, in)
		}
		dest := "out/intermediate-failing.zip"
		_, err := r.Run(context.Background(), compressRequest("z/", dest), "intermediate-failing")
		if seen.Load() < 3 {
			t.Errorf("only %d piece writes were tried", seen.Load())
		}
		w.judge(t, started, nil, wantFailure("TransientError"), outcome{err: err, dest: dest})
	})
}
