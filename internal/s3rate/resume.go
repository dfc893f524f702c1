package s3rate

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Getter is what a resumed body needs of an S3 client.
type Getter interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// BodyResumes is how many times a body resumes after it was cut: as often
// as a request is tried.
const BodyResumes = DefaultAttempts

// Resume is out's body, the answer to in (a GET from byte from on, to the
// end of in's Range when it has one), which, cut by a reset connection or
// a stall, asks for the rest from the byte it reached to that end, pinned
// to the ETag of the first answer, at most BodyResumes times. The SDK's retries end with the headers: a line reader handed a
// cut body takes its last, cut line for a corrupt file. A read that still
// fails returns the body's last error; a resume S3 refuses, S3's.
func Resume(ctx context.Context, c Getter, in *s3.GetObjectInput, out *s3.GetObjectOutput, from int64) io.ReadCloser {
	return &resumedBody{ctx: ctx, c: c, in: *in, etag: aws.ToString(out.ETag), at: from, to: rangeEnd(aws.ToString(in.Range)), body: out.Body}
}

// rangeEnd is the last byte a "bytes=a-b" range asks for, "" for a range
// to the object's end.
func rangeEnd(r string) string {
	_, spec, ok := strings.Cut(r, "=")
	if !ok {
		return ""
	}
	_, end, _ := strings.Cut(spec, "-")
	return end
}

type resumedBody struct {
	ctx     context.Context
	c       Getter
	in      s3.GetObjectInput
	etag    string
	at      int64  // the next byte to read
	to      string // the last byte asked for, "" for the object's end
	resumed int
	body    io.ReadCloser
	err     error // a resume that failed: every Read's from then on
}

func (b *resumedBody) Read(p []byte) (int, error) {
	for b.err == nil {
		n, err := b.body.Read(p)
		b.at += int64(n)
		switch {
		case err == nil || err == io.EOF:
			return n, err
		case n > 0:
			return n, nil // the error again on the next Read
		case b.resumed >= BodyResumes || b.ctx.Err() != nil:
			return 0, err
		case b.to != "" && strconv.FormatInt(b.at-1, 10) == b.to:
			return 0, io.EOF // every byte asked for came; only the end broke off
		}
		b.body.Close()
		b.resumed++
		in := b.in
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%s", b.at, b.to))
		if b.etag != "" {
			in.IfMatch = &b.etag
		}
		out, oerr := b.c.GetObject(b.ctx, &in)
		if oerr != nil {
			b.err = oerr
			break
		}
		b.body = out.Body
	}
	return 0, b.err
}

func (b *resumedBody) Close() error { return b.body.Close() }
