package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3part"
)

// MinPartSize is S3's (and versitygw's) minimum size of every multipart part but the last.
const MinPartSize = s3part.MinPartSize

// Options returns the s3.Options that point a client at this server: static
// root credentials, BaseEndpoint, path-style addressing, region us-east-1. The
// SDK's checksum defaults are kept (CRC32 on every upload, "when supported").
func (s *Server) Options() s3.Options {
	return s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.accessKey, s.secretKey, ""),
	}
}

// Client returns an S3 client for this server (see Options). optFns adjust it,
// e.g. to set RequestChecksumCalculation to aws.RequestChecksumCalculationWhenRequired.
func (s *Server) Client(tb testing.TB, optFns ...func(*s3.Options)) *s3.Client {
	tb.Helper()
	return s3.New(s.Options(), optFns...)
}

// rawClient sends a checksum only when the request asks for one, so the
// helpers below store exactly the checksum they were told to.
func (s *Server) rawClient() *s3.Client {
	return s3.New(s.Options(), func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// Checksum is the additional checksum a helper stores with an object.
type Checksum string

const (
	// ChecksumNone stores no additional checksum (like an object uploaded by an
	// older SDK or by a client that disabled checksums).
	ChecksumNone Checksum = ""
	// ChecksumCRC32 stores a CRC32 (what current AWS SDKs and the CLI send by default).
	ChecksumCRC32 Checksum = "CRC32"
	// ChecksumCRC32C stores a CRC32C (Castagnoli): not the CRC-32 a ZIP needs.
	ChecksumCRC32C Checksum = "CRC32C"
	// ChecksumSHA1 stores a SHA1.
	ChecksumSHA1 Checksum = "SHA1"
	// ChecksumSHA256 stores a SHA256.
	ChecksumSHA256 Checksum = "SHA256"
	// ChecksumCRC64NVME stores a CRC64NVME (S3's default for objects uploaded
	// without a checksum since 2025).
	ChecksumCRC64NVME Checksum = "CRC64NVME"
)

type putOptions struct {
	checksum     Checksum
	checksumType types.ChecksumType
	contentType  string
}

// PutOption changes how PutObject and PutMultipartObject store an object.
type PutOption func(*putOptions)

// WithChecksum stores the object with the given additional checksum (default ChecksumNone).
func WithChecksum(c Checksum) PutOption { return func(o *putOptions) { o.checksum = c } }

// WithChecksumType sets the multipart upload's checksum type
// (types.ChecksumTypeComposite or types.ChecksumTypeFullObject); PutMultipartObject only.
// The default leaves it to the server (COMPOSITE on versitygw and S3).
func WithChecksumType(t types.ChecksumType) PutOption {
	return func(o *putOptions) { o.checksumType = t }
}

// WithContentType stores the object with this Content-Type (default: none
// given, so the server's).
func WithContentType(typ string) PutOption { return func(o *putOptions) { o.contentType = typ } }

func collect(opts []PutOption) putOptions {
	var o putOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// CreateBucket creates a bucket, failing the test on error.
func (s *Server) CreateBucket(tb testing.TB, name string) {
	tb.Helper()
	_, err := s.rawClient().CreateBucket(ctx(tb), &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		tb.Fatalf("s3test: create bucket %q: %v", name, err)
	}
}

// PutObject stores body as bucket/key with a single PUT, with the checksum
// chosen by WithChecksum (none by default), failing the test on error.
func (s *Server) PutObject(tb testing.TB, bucket, key string, body []byte, opts ...PutOption) *s3.PutObjectOutput {
	tb.Helper()
	o := collect(opts)
	out, err := s.putObject(ctx(tb), s.rawClient(), bucket, key, body, o)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// PutObjects stores every key → body of objects in bucket as PutObject
// does, 16 at a time: thousands of small objects in seconds.
func (s *Server) PutObjects(tb testing.TB, bucket string, objects map[string][]byte, opts ...PutOption) {
	tb.Helper()
	o := collect(opts)
	c := s.rawClient()
	g, gctx := errgroup.WithContext(ctx(tb))
	g.SetLimit(16)
	for key, body := range objects {
		g.Go(func() error {
			_, err := s.putObject(gctx, c, bucket, key, body, o)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		tb.Fatal(err)
	}
}

// PutEach stores n objects, the i-th made by object(i) when it is stored, at
// most concurrency at a time through one client: a million small objects
// without holding them in memory (and without a connection each). The first
// error stops it.
func (s *Server) PutEach(ctx context.Context, bucket string, n, concurrency int, object func(i int) (key string, body []byte, c Checksum)) error {
	c := s.rawClient()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for i := 0; i < n && gctx.Err() == nil; i++ {
		g.Go(func() error {
			key, body, sum := object(i)
			_, err := s.putObject(gctx, c, bucket, key, body, putOptions{checksum: sum})
			return err
		})
	}
	return g.Wait()
}

func (s *Server) putObject(ctx context.Context, c *s3.Client, bucket, key string, body []byte, o putOptions) (*s3.PutObjectOutput, error) {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if o.checksum != ChecksumNone {
		in.ChecksumAlgorithm = types.ChecksumAlgorithm(o.checksum)
	}
	if o.contentType != "" {
		in.ContentType = aws.String(o.contentType)
	}
	out, err := c.PutObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("s3test: put s3://%s/%s (%d bytes, checksum %q): %w", bucket, key, len(body), o.checksum, err)
	}
	return out, nil
}

// PutMultipartObject stores the concatenation of parts as bucket/key with a
// multipart upload, one UploadPart per element (every part but the last must
// be at least MinPartSize). WithChecksum sets the upload's checksum algorithm
// (and every part's checksum); WithChecksumType its type. The test fails on error.
func (s *Server) PutMultipartObject(tb testing.TB, bucket, key string, parts [][]byte, opts ...PutOption) *s3.CompleteMultipartUploadOutput {
	tb.Helper()
	o := collect(opts)
	out, err := s.putMultipart(ctx(tb), bucket, key, parts, o)
	if err != nil {
		tb.Fatalf("s3test: multipart put s3://%s/%s (%d parts, checksum %q %q): %v", bucket, key, len(parts), o.checksum, o.checksumType, err)
	}
	return out
}

func (s *Server) putMultipart(ctx context.Context, bucket, key string, parts [][]byte, o putOptions) (*s3.CompleteMultipartUploadOutput, error) {
	c := s.rawClient()
	create := &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if o.contentType != "" {
		create.ContentType = aws.String(o.contentType)
	}
	if o.checksum != ChecksumNone {
		create.ChecksumAlgorithm = types.ChecksumAlgorithm(o.checksum)
		create.ChecksumType = o.checksumType
	}
	mpu, err := c.CreateMultipartUpload(ctx, create)
	if err != nil {
		return nil, fmt.Errorf("create multipart upload: %w", err)
	}
	abort := func(cause error) error {
		_, aerr := c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{
			Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mpu.UploadId})
		return errors.Join(cause, aerr)
	}
	completed := make([]types.CompletedPart, 0, len(parts))
	for i, p := range parts {
		n := int32(i + 1)
		in := &s3.UploadPartInput{
			Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mpu.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(p), ContentLength: aws.Int64(int64(len(p))),
		}
		if o.checksum != ChecksumNone {
			in.ChecksumAlgorithm = types.ChecksumAlgorithm(o.checksum)
		}
		up, err := c.UploadPart(ctx, in)
		if err != nil {
			return nil, abort(fmt.Errorf("upload part %d (%d bytes): %w", n, len(p), err))
		}
		completed = append(completed, types.CompletedPart{
			PartNumber: aws.Int32(n), ETag: up.ETag,
			ChecksumCRC32: up.ChecksumCRC32, ChecksumSHA256: up.ChecksumSHA256, ChecksumCRC64NVME: up.ChecksumCRC64NVME,
		})
	}
	out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mpu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: completed},
	})
	if err != nil {
		return nil, abort(fmt.Errorf("complete multipart upload: %w", err))
	}
	return out, nil
}

// Keys returns every key under prefix in bucket, failing the test on error.
func (s *Server) Keys(tb testing.TB, bucket, prefix string) []string {
	tb.Helper()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(s.rawClient(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx(tb))
		if err != nil {
			tb.Fatalf("s3test: list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// GetObject returns the whole content of bucket/key, failing the test on error.
func (s *Server) GetObject(tb testing.TB, bucket, key string) []byte {
	tb.Helper()
	out, err := s.rawClient().GetObject(ctx(tb), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		tb.Fatalf("s3test: get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		tb.Fatalf("s3test: read s3://%s/%s: %v", bucket, key, err)
	}
	return b
}

// DownloadFile streams bucket/key into the file at path (created or
// truncated), for objects too big to hold in memory; it returns the size.
func (s *Server) DownloadFile(tb testing.TB, bucket, key, path string) int64 {
	tb.Helper()
	out, err := s.rawClient().GetObject(ctx(tb), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		tb.Fatalf("s3test: get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatalf("s3test: download s3://%s/%s: %v", bucket, key, err)
	}
	n, err := io.Copy(f, out.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatalf("s3test: download s3://%s/%s to %s: %v", bucket, key, path, err)
	}
	return n
}

// ctx is the test's context: cancelled when the test ends, so a hung request
// does not outlive it.
func ctx(tb testing.TB) context.Context { return tb.Context() }

// ObjectSize is an object's size as a HEAD of it says (a version's when
// versionID is not empty): what faultproxy.Config.SourceSize asks.
func (s *Server) ObjectSize(bucket, key, versionID string) (int64, error) {
	in := &s3.HeadObjectInput{Bucket: &bucket, Key: &key}
	if versionID != "" {
		in.VersionId = &versionID
	}
	out, err := s.rawClient().HeadObject(context.Background(), in)
	if err != nil {
		return 0, err
	}
	return aws.ToInt64(out.ContentLength), nil
}
