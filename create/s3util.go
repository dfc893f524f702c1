package create

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3doc"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// S3 is what the workflow's handlers ask of S3, all of which *s3.Client has.
// Which handler may call what is for the IAM policies in
// infra/lib/archive-grants.ts to enforce, not for this interface.
type S3 interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
	ListParts(context.Context, *s3.ListPartsInput, ...func(*s3.Options)) (*s3.ListPartsOutput, error)
}

// copied returns the part's ETag and CRC-32 from S3's answer to an
// UploadPartCopy from bucket/key; crc is empty when S3 gave none. An answer
// without a CopyPartResult says nothing about what was written, so it is an
// error rather than a nil dereference.
func copied(out *s3.UploadPartCopyOutput, bucket, key string) (etag, crc string, err error) {
	if out == nil || out.CopyPartResult == nil {
		return "", "", fmt.Errorf("UploadPartCopy s3://%s/%s: S3's answer has no CopyPartResult", bucket, key)
	}
	return aws.ToString(out.CopyPartResult.ETag), aws.ToString(out.CopyPartResult.ChecksumCRC32), nil
}

// fullObjectCRC returns an object's CRC-32 from HeadObject when S3 has the
// whole object's, not a composite "…-N" of its parts.
func fullObjectCRC(h *s3.HeadObjectOutput) (uint32, bool) {
	if h.ChecksumType == types.ChecksumTypeComposite {
		return 0, false
	}
	return s3part.DecodeCRC(aws.ToString(h.ChecksumCRC32))
}

// getBytes reads a whole small object. More than limit bytes is a
// *s3doc.TooLargeError.
func getBytes(ctx context.Context, c S3, bucket, key string, limit int64) ([]byte, error) {
	body, err := openObject(ctx, c, bucket, key)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return s3doc.ReadAll(body, bucket, key, limit)
}

// openObject opens an object to be read as it arrives, so that an entries
// file of millions of lines is decoded without being held whole first.
// s3doc.Open resumes a body cut short, and a read that still fails is a
// stepfn.TransientError.
func openObject(ctx context.Context, c S3, bucket, key string) (io.ReadCloser, error) {
	return openObjectFrom(ctx, c, bucket, key, 0)
}

// openObjectFrom opens an object as openObject does, from byte from on.
func openObjectFrom(ctx context.Context, c S3, bucket, key string, from int64) (io.ReadCloser, error) {
	body, err := s3doc.Open(ctx, c, bucket, key, from)
	if err != nil {
		return nil, s3Error("GetObject", bucket, key, false, err)
	}
	return &objectBody{ReadCloser: body, bucket: bucket, key: key}, nil
}

// resumed returns out's body, the answer to in, which s3rate.Resume resumes
// from the byte it reached when it stalls or is cut. Its failed reads are
// named and typed. source says the object is a planned source, whose resume
// refused by If-Match is a changed source.
func resumed(ctx context.Context, c S3, in *s3.GetObjectInput, out *s3.GetObjectOutput, source bool) io.ReadCloser {
	var from int64 // where in's range starts, as "bytes=from-" or "bytes=from-to"
	_, _ = fmt.Sscanf(aws.ToString(in.Range), "bytes=%d-", &from)
	return &objectBody{ReadCloser: s3rate.Resume(ctx, c, in, out, from), bucket: aws.ToString(in.Bucket), key: aws.ToString(in.Key), source: source}
}

// objectBody is an object's body whose failed reads are named and typed.
type objectBody struct {
	io.ReadCloser
	bucket, key string
	source      bool
}

func (b *objectBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		var re interface{ HTTPStatusCode() int }
		if errors.As(err, &re) { // a resume S3 answered
			return n, s3Error("GetObject", b.bucket, b.key, b.source, err)
		}
		err = &stepfn.TransientError{Op: fmt.Sprintf("read s3://%s/%s", b.bucket, b.key), Err: err}
	}
	return n, err
}

// pin returns the If-Match and VersionId that read a source as it was
// planned, each nil where the plan pinned none.
func pin(etag, versionID string) (ifMatch, version *string) {
	if etag != "" {
		ifMatch = &etag
	}
	if versionID != "" {
		version = &versionID
	}
	return ifMatch, version
}

// getRange reads bytes [from, from+len(dst)) of an object into dst, pinned
// by ETag.
func getRange(ctx context.Context, c S3, src *sourceRef, from int64, dst []byte) error {
	read := 0
	for attempt := 1; ; attempt++ {
		n, err := getRangeOnce(ctx, c, src, from+int64(read), dst[read:])
		read += n
		var lost *bodyLost
		if err == nil || !errors.As(err, &lost) || attempt >= bodyAttempts || ctx.Err() != nil {
			return err
		}
		// The body stalled or broke off, so the rest is asked for again from
		// where it stopped. The GET is pinned, so the bytes are the same.
	}
}

// bodyAttempts is how many GETs one range's body may take when it breaks
// off, on s3rate's idle-body timeout or a connection reset.
const bodyAttempts = 4

// bodyLost is a response body that broke off after its headers. The request
// succeeded, but the bytes did not all arrive.
type bodyLost struct{ stepfn.TransientError }

func (e *bodyLost) Unwrap() error { return &e.TransientError }

// getRangeOnce reads the range into dst with one GET and returns how many
// bytes of dst it filled.
func getRangeOnce(ctx context.Context, c S3, src *sourceRef, from int64, dst []byte) (int, error) {
	to := from + int64(len(dst))
	in := &s3.GetObjectInput{Bucket: &src.Bucket, Key: &src.Key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", from, to-1))}
	in.IfMatch, in.VersionId = pin(src.ETag, src.VersionID)
	out, err := c.GetObject(ctx, in)
	if err != nil {
		return 0, s3Error("GetObject", src.Bucket, src.Key, !src.work, err)
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); n != to-from {
		// A server that ignored the range would hand over the wrong bytes.
		return 0, fmt.Errorf("GetObject s3://%s/%s bytes %d-%d: %d bytes came back", src.Bucket, src.Key, from, to-1, n)
	}
	n, err := io.ReadFull(out.Body, dst)
	if err != nil {
		return n, &bodyLost{stepfn.TransientError{Op: fmt.Sprintf("read s3://%s/%s bytes %d-%d", src.Bucket, src.Key, from, to-1), Err: err}}
	}
	return n, nil
}

// sourceRef names an object a read GETs, pinned by ETag and version where
// they are set.
type sourceRef struct {
	Bucket, Key, ETag, VersionID string
	// work says the object is s3zip's own, such as the plan's entries, not a
	// source. Missing or changed, it is not a changed source.
	work bool
}

// s3Named names a failed S3 call for the create state machine, as s3Error
// does, in the form s3prefix.Under's ErrorNamer takes.
func s3Named(op, bucket, key string, err error) error { return s3Error(op, bucket, key, false, err) }

// deletePrefix deletes every object under prefix.
func deletePrefix(ctx context.Context, c S3, bucket, prefix string) (int, error) {
	return s3prefix.Under{Bucket: bucket, Prefix: prefix, Named: s3Named}.Delete(ctx, c)
}

// abortUploadsUnder aborts every multipart upload under prefix, such as the
// chain rounds a failed worker left behind.
func abortUploadsUnder(ctx context.Context, c S3, bucket, prefix string) (int, error) {
	n := 0
	err := s3prefix.Under{Bucket: bucket, Prefix: prefix, Named: s3Named}.EachUpload(ctx, c, func(u types.MultipartUpload) error {
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: u.Key, UploadId: u.UploadId}); err != nil && !s3err.NotFound(err) {
			return s3Error("AbortMultipartUpload", bucket, aws.ToString(u.Key), false, err)
		}
		n++
		return nil
	})
	return n, err
}

// destPart returns part n of the archive's upload.
func destPart(job *Job, n int) s3part.Part {
	return s3part.Part{Bucket: job.Destination.Bucket, Key: job.Destination.Key, UploadID: job.UploadID, Number: int32(n)}
}

// pinned returns a planned source of size bytes, as a copy must find it.
func pinned(src plan.Source, size int64) s3part.Pinned {
	return s3part.Pinned{Bucket: src.Bucket, Key: src.Key, VersionID: src.VersionID, ETag: src.ETag, Size: size}
}

// writeJSON writes v as a work object.
func writeJSON(ctx context.Context, c S3, bucket, key string, v any) error {
	return s3Error("PutObject", bucket, key, false, s3doc.PutJSON(ctx, c, bucket, key, v))
}

// forEach runs fn for 0..n-1 with at most limit at once. The first error
// cancels the rest and is returned.
func forEach(ctx context.Context, limit, n int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// newAttempt returns a random name that tells one attempt's objects from
// another's.
func newAttempt() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sourceOf returns a planned source as the reads name it, pinned by its ETag
// and version.
func sourceOf(s plan.Source) *sourceRef {
	return &sourceRef{Bucket: s.Bucket, Key: s.Key, ETag: s.ETag, VersionID: s.VersionID}
}
