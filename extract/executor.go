package extract

// The executor runs a worker's jobs against S3. A copy job, in copyjob.go,
// makes a STORED entry an object server-side; a read job, in readjob.go,
// reads neighbouring entries with one ranged GET and writes each.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/zipread"
)

// executor runs jobs and remembers what it began and wrote. A failing job
// or an interrupt cancels the batch but not its writes, since a write cut
// off mid-request may still land on the server; every write in flight is
// let finish and its answer recorded. Cancelling stops new jobs and reads.
type executor struct {
	c    Client
	a    *zipread.Archive
	ex   *Extraction
	dest string   // the destination bucket
	puts putSlots // the small-object PUTs in flight

	mu      sync.Mutex
	uploads map[string]string // upload ID → key, while open
	written []Written
	// quirk says the server answers ranged copies with a wrong CRC-32, so
	// copies are checked by reading instead.
	quirk      atomic.Bool
	verifyRead atomic.Int64 // bytes read only to check copies
}

func newExecutor(c Client, ex *Extraction) *executor {
	return &executor{c: c, a: ex.archive(), ex: ex, dest: ex.DestBucket, puts: newPutSlots(), uploads: map[string]string{}}
}

func (x *executor) run(ctx context.Context, j Job) error {
	switch j.Kind {
	case KindCopy:
		return x.copyEntry(ctx, &j.Items[0], j.Ranges)
	case KindRead:
		return x.readGroup(ctx, &j)
	}
	return fmt.Errorf("unknown job kind %q", j.Kind)
}

// get reads a range of the archive, pinned by its ETag. A body that
// stalls or breaks off resumes from the byte it reached through
// s3rate.Resume, so the entries being written from it wait one idle
// timeout, and none is read again.
func (x *executor) get(ctx context.Context, r Range) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{
		Bucket: &x.a.Bucket, Key: &x.a.Key, IfMatch: aws.String(x.a.ETag),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.Start, r.End-1)),
	}
	out, err := x.c.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("get %s bytes %d-%d: %w", x.a, r.Start, r.End-1, sourceChanged(err, x.a))
	}
	return s3rate.Resume(ctx, x.c, in, out, r.Start), nil
}

// metadata returns the user metadata an entry's object is written with.
// That is exactly what the archive kept of it, else the entry's
// modification time as rclone and s3fs read it, and the execution that wrote it.
func (x *executor) metadata(it *Item) map[string]string {
	m := map[string]string{ExecutionMetadata: x.ex.Execution}
	if it.Meta == nil {
		m[objmeta.KeyMtime] = objmeta.FormatMtime(it.Modified)
		return m
	}
	for k, v := range it.Meta.User {
		if k != ExecutionMetadata {
			m[k] = v
		}
	}
	return m
}

// headers returns the Content-Encoding and Cache-Control the archive kept
// of an entry's object, or nil when none.
func (it *Item) headers() (encoding, cacheControl *string) {
	if it.Meta == nil {
		return nil, nil
	}
	if it.Meta.ContentEncoding != "" {
		encoding = &it.Meta.ContentEncoding
	}
	if it.Meta.CacheControl != "" {
		cacheControl = &it.Meta.CacheControl
	}
	return encoding, cacheControl
}

// alreadyOurs says whether a write refused by If-None-Match met an object
// this execution wrote before, in a batch run again, which counts as written.
func (x *executor) alreadyOurs(ctx context.Context, err error, it *Item) bool {
	if !s3err.IsCode(err, "PreconditionFailed", "NoSuchUpload") {
		return false
	}
	h, herr := x.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &x.dest, Key: &it.Key})
	return herr == nil && h.Metadata[ExecutionMetadata] == x.ex.Execution && aws.ToInt64(h.ContentLength) == it.Size
}

// classify names a refused write by what it means for the extraction.
func (x *executor) classify(err error, key string) error {
	return writeRefused(err, x.dest, key, x.ex.Overwrite)
}

// The uploads begun and the objects written are recorded for abortOpen
// and the batch's output.

func (x *executor) began(key, id string) {
	x.mu.Lock()
	x.uploads[id] = key
	x.mu.Unlock()
}

func (x *executor) ended(id string) {
	x.mu.Lock()
	delete(x.uploads, id)
	x.mu.Unlock()
}

func (x *executor) wrote(it *Item) {
	x.mu.Lock()
	x.written = append(x.written, Written{Key: it.Key, Size: it.Size, CRC32: fmt.Sprintf("%08x", it.CRC32)})
	x.mu.Unlock()
}

func (x *executor) sortedWritten() []Written {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := append([]Written(nil), x.written...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// abortOpen aborts the uploads a failed batch still has open.
func (x *executor) abortOpen(ctx context.Context) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for id, key := range x.uploads {
		if _, err := x.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &x.dest, Key: aws.String(key), UploadId: aws.String(id)}); err == nil || s3err.IsCode(err, "NoSuchUpload") {
			delete(x.uploads, id)
		}
	}
}

// The multipart uploads of copy jobs and of large read entries. Neither
// create nor complete is cancelled with the run, since an upload S3 creates
// must be known to be aborted, and a completed one recorded to be deleted.

// settleGrace is how long a request whose outcome the run must know goes
// on, with its retries, once the run is stopped.
const settleGrace = 20 * time.Second

// settle returns ctx without its cancellation, for a request whose outcome
// the run must know to undo it, such as an upload created or an object
// completed. A stopped run lets it and its retries go on for settleGrace,
// not for as long as they take.
func settle(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		timer := time.AfterFunc(settleGrace, cancel)
		context.AfterFunc(out, func() { timer.Stop() })
	})
	return out, func() { stop(); cancel() }
}

// create begins the upload of an entry's object, with CRC-32 FULL_OBJECT
// checksums when checksum is set.
func (x *executor) create(ctx context.Context, it *Item, checksum bool) (string, error) {
	in := &s3.CreateMultipartUploadInput{Bucket: &x.dest, Key: &it.Key, ContentType: aws.String(it.ContentType), Metadata: x.metadata(it)}
	in.ContentEncoding, in.CacheControl = it.headers()
	if checksum {
		in.ChecksumAlgorithm, in.ChecksumType = types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject
	}
	sctx, done := settle(ctx)
	defer done()
	cr, err := x.c.CreateMultipartUpload(sctx, in)
	if err != nil {
		return "", fmt.Errorf("entry %q: create upload for s3://%s/%s: %w", it.Name, x.dest, it.Key, err)
	}
	id := aws.ToString(cr.UploadId)
	x.began(it.Key, id)
	return id, nil
}

// complete completes an entry's upload and records the object as written.
// When checksum is set it sends the entry's CRC-32, so S3 checks it.
func (x *executor) complete(ctx context.Context, it *Item, id string, parts []types.CompletedPart, checksum bool) error {
	ctx, done := settle(ctx)
	defer done()
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &x.dest, Key: &it.Key, UploadId: &id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		MpuObjectSize:   aws.Int64(it.Size),
	}
	if checksum {
		in.ChecksumCRC32, in.ChecksumType = aws.String(s3part.CRCBase64(it.CRC32)), types.ChecksumTypeFullObject
	}
	if !it.Replaces {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := x.c.CompleteMultipartUpload(ctx, in); err != nil {
		if !x.alreadyOurs(ctx, err, it) {
			return fmt.Errorf("entry %q: complete s3://%s/%s with CRC-32 %08x: %w", it.Name, x.dest, it.Key, it.CRC32, x.classify(err, it.Key))
		}
		_, _ = x.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &x.dest, Key: &it.Key, UploadId: &id})
	}
	x.ended(id)
	x.wrote(it)
	return nil
}
