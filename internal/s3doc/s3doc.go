// Package s3doc reads and writes the small objects a run keeps in S3 whole:
// plans, jobs, results, records. Every object it puts carries its CRC-32,
// so S3 refuses a body that arrived damaged; every body it opens resumes
// from the byte it reached when the connection stalls or is cut. Errors are
// the SDK's, for the caller to name.
package s3doc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/s3rate"
)

// Client is what reading and writing documents asks of S3.
type Client interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Put writes doc to bucket/key with its length and CRC-32.
func Put(ctx context.Context, c Client, bucket, key string, doc []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc))),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc32.ChecksumIEEE(doc)))})
	return err
}

// PutJSON writes v's JSON encoding to bucket/key, as Put does.
func PutJSON(ctx context.Context, c Client, bucket, key string, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode s3://%s/%s: %w", bucket, key, err)
	}
	return Put(ctx, c, bucket, key, doc)
}

// Open opens bucket/key from byte from on. Its body resumes from the byte
// it reached when it stalls or is cut (s3rate.Resume).
func Open(ctx context.Context, c Client, bucket, key string, from int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if from > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", from))
	}
	out, err := c.GetObject(ctx, in)
	if err != nil {
		return nil, err
	}
	return s3rate.Resume(ctx, c, in, out, from), nil
}

// ReadAll reads body whole, refusing one of more than limit bytes with a
// *TooLargeError for bucket/key.
func ReadAll(body io.Reader, bucket, key string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Bucket: bucket, Key: key, Limit: limit}
	}
	return b, nil
}

// TooLargeError says an object read whole is over its limit.
type TooLargeError struct {
	Bucket, Key string
	Limit       int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("s3://%s/%s is over %d bytes", e.Bucket, e.Key, e.Limit)
}
