package s3rate

import (
	"context"
	"fmt"
	"io"

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

// Resume is out's body, the answer to in (a GET from byte from on), which,
// cut by a reset connection or a stall, asks for the rest from the byte it
// reached, pinned to the ETag of the first answer, at most BodyResumes
// times. The SDK's retries end with the headers: a line reader handed a
// cut body takes its last, cut line for a corrupt file. A read that still
// fails returns the body's last error; a resume S3 refuses, S3's.
func Resume(ctx context.Context, c Getter, in *s3.GetObjectInput, out *s3.GetObjectOutput, from int64) io.ReadCloser {
	return &resumedBody{ctx: ctx, c: c, in: *in, etag: aws.ToString(out.ETag), at: from, body: out.Body}
}

type resumedBody struct {
	ctx     context.Context
	c       Getter
	in      s3.GetObjectInput
	etag    string
	at      int64 // the next byte to read
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
		}
		b.body.Close()
		b.resumed++
		in := b.in
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", b.at))
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
