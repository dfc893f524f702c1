package create

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/stepfn"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/plan"
)

// streamCopyRange uploads a copy part's bytes through the worker when
// copyPart finds S3's answer cannot be the part's checksum. The part keeps
// the number and size the plan fixed, so a range of up to 5 GiB is streamed
// from GET to UploadPart in bounded memory.
//
// UploadPart needs the CRC-32 up front, since the SDK sends a trailing
// checksum only over HTTPS. rangeCRC gives it from the plan when it can,
// else a first streaming read of the range does; a second read streams into
// UploadPart, unsigned, and S3 checks the bytes against the CRC-32.
// docs/versitygw.md, "Which copy answer is trusted when", says more.
func (b *partBuilder) streamCopyRange(ctx context.Context, item *plan.PartJob) (*PartResult, error) {
	job := b.job
	src := sourceOf(*item.Source)
	from, to := item.SourceRange[0], item.SourceRange[1]
	crc, read, err := rangeCRC(ctx, b.s3, src, item)
	if err != nil {
		return nil, err
	}
	b.log.Info("streaming a copy part", "execution", job.Execution, "part", item.Number, "bytes", to-from, "readForCRC", read)
	body := newRangeReader(ctx, b.s3, src, from, to)
	defer body.Close()
	out, err := b.s3.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &job.Destination.Bucket, Key: &job.Destination.Key, UploadId: &job.UploadID,
		PartNumber: aws.Int32(int32(item.Number)), Body: body, ContentLength: aws.Int64(to - from),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc)),
	}, func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	})
	if err != nil {
		if body.err != nil {
			return nil, body.err // the source side failed: say so, not UploadPart
		}
		return nil, s3Error("UploadPart", job.Destination.Bucket, job.Destination.Key, false, err)
	}
	got := aws.ToString(out.ChecksumCRC32)
	if got != "" && got != s3part.CRCBase64(crc) {
		return nil, failure.Checksum("S3 reports CRC-32 %s for part %d, streamed from s3://%s/%s bytes %d-%d whose CRC-32 is %s",
			got, item.Number, src.Bucket, src.Key, from, to-1, s3part.CRCBase64(crc))
	}
	return &PartResult{Part: item.Number, ETag: aws.ToString(out.ETag), ChecksumCRC32: s3part.CRCBase64(crc), StreamedBytes: to - from}, nil
}

// rangeReader reads bytes [from, to) of a source with ranged GETs pinned by
// ETag. It is an io.ReadSeeker because the SDK rewinds a request body to
// retry it, and a seek drops the open response so the next read GETs from
// there. Nothing is requested until the first read. A body that breaks off,
// on s3rate's idle timeout or a reset, is asked for again from the byte it
// reached, up to bodyAttempts GETs, so that a stalled source costs the
// upload it feeds one idle timeout, not the whole part sent again.
type rangeReader struct {
	ctx      context.Context
	c        S3
	src      *sourceRef
	from, to int64
	pos      int64 // absolute offset of the next byte
	body     io.ReadCloser
	gets     int   // GETs of this attempt whose bodies broke off
	err      error // the source-side failure of this attempt, for the caller's message
}

// newRangeReader returns a reader of bytes [from, to) of src.
func newRangeReader(ctx context.Context, c S3, src *sourceRef, from, to int64) *rangeReader {
	return &rangeReader{ctx: ctx, c: c, src: src, from: from, to: to, pos: from}
}

func (r *rangeReader) Read(p []byte) (int, error) {
	for {
		n, err := r.readOnce(p)
		var lost *bodyLost
		if n > 0 || !errors.As(err, &lost) || r.gets >= bodyAttempts || r.ctx.Err() != nil {
			return n, err
		}
		r.err = nil
		r.Close() // the next readOnce GETs the rest
	}
}

// readOnce reads from the open response, opening one from pos first when
// there is none. A body that broke off returns a *bodyLost.
func (r *rangeReader) readOnce(p []byte) (int, error) {
	if r.pos >= r.to {
		return 0, io.EOF
	}
	if r.body == nil {
		in := &s3.GetObjectInput{Bucket: &r.src.Bucket, Key: &r.src.Key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.pos, r.to-1))}
		if r.src.ETag != "" {
			in.IfMatch = &r.src.ETag
		}
		if r.src.VersionID != "" {
			in.VersionId = &r.src.VersionID
		}
		out, err := r.c.GetObject(r.ctx, in)
		if err != nil {
			return 0, r.fail(s3Error("GetObject", r.src.Bucket, r.src.Key, true, err))
		}
		if n := aws.ToInt64(out.ContentLength); n != r.to-r.pos {
			out.Body.Close()
			return 0, r.fail(fmt.Errorf("GetObject s3://%s/%s bytes %d-%d: %d bytes came back", r.src.Bucket, r.src.Key, r.pos, r.to-1, n))
		}
		r.body, r.gets = out.Body, r.gets+1
	}
	if int64(len(p)) > r.to-r.pos {
		p = p[:r.to-r.pos]
	}
	n, err := r.body.Read(p)
	r.pos += int64(n)
	switch {
	case errors.Is(err, io.EOF) && r.pos < r.to:
		err = io.ErrUnexpectedEOF
	case errors.Is(err, io.EOF) || err == nil:
		if r.pos == r.to {
			return n, io.EOF
		}
		return n, nil
	}
	if n > 0 {
		return n, nil // the body's error again on the next read
	}
	return 0, r.fail(&bodyLost{stepfn.TransientError{Op: fmt.Sprintf("read s3://%s/%s bytes %d-%d", r.src.Bucket, r.src.Key, r.pos, r.to-1), Err: err}})
}

func (r *rangeReader) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

func (r *rangeReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = r.from + offset
	case io.SeekCurrent:
		abs = r.pos + offset
	case io.SeekEnd:
		abs = r.to + offset
	default:
		return 0, fmt.Errorf("seek: whence %d", whence)
	}
	if abs < r.from || abs > r.to {
		return 0, fmt.Errorf("seek to %d: outside bytes %d-%d of s3://%s/%s", abs-r.from, r.from, r.to-1, r.src.Bucket, r.src.Key)
	}
	if abs != r.pos {
		r.Close()
		r.pos = abs
		r.err, r.gets = nil, 0 // a rewound body starts another attempt
	}
	return abs - r.from, nil
}

// Close drops the open response, if any, and a later read GETs again.
func (r *rangeReader) Close() error {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	return nil
}
