package load_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// syntheticS3 is an in-memory S3 for plans too big for a local server: a
// source bucket of n generated objects (nothing stored: names, bytes and
// CRC-32s are computed from the index), a work bucket that stores what is put
// into it, and a destination that keeps only the sizes and checksums of parts.
type syntheticS3 struct {
	n       int
	dir     string // work objects live in files, off the Go heap, so they do not skew the measurements
	mu      sync.Mutex
	work    map[string]int64 // key → size; the bytes are in dir
	parts   map[int32]int64
	done    map[string]int64 // completed archives: key → size
	doneCRC map[string]string
}

func newSyntheticS3(n int, dir string) *syntheticS3 {
	return &syntheticS3{n: n, dir: dir, work: map[string]int64{}, parts: map[int32]int64{}, done: map[string]int64{}, doneCRC: map[string]string{}}
}

const srcBucket, workBucket, dstBucket = "src", "work", "dst"

func synthKey(i int) string { return fmt.Sprintf("e/%07d", i) }
func synthSize(i int) int   { return i % 32 }
func synthBody(i int) []byte {
	b := make([]byte, synthSize(i))
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

func synthIndex(key string) (int, bool) {
	if !strings.HasPrefix(key, "e/") {
		return 0, false
	}
	i, err := strconv.Atoi(key[2:])
	return i, err == nil
}

func b64(crc uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc)
	return base64.StdEncoding.EncodeToString(b[:])
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func notFound() error { return &types.NotFound{} }

func (s *syntheticS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	b := aws.ToString(in.Bucket)
	out := &s3.ListObjectsV2Output{}
	switch b {
	case srcBucket:
		// After StartAfter, as S3 lists: the planner lists ranges of the
		// key space side by side.
		from := sort.Search(s.n, func(i int) bool { return synthKey(i) > aws.ToString(in.StartAfter) })
		if tok := aws.ToString(in.ContinuationToken); tok != "" {
			from, _ = strconv.Atoi(tok)
		}
		to := min(from+1000, s.n)
		for i := from; i < to; i++ {
			out.Contents = append(out.Contents, types.Object{Key: aws.String(synthKey(i)), Size: aws.Int64(int64(synthSize(i))), ETag: aws.String(fmt.Sprintf(`"%d"`, i)), LastModified: aws.Time(epoch)})
		}
		if to < s.n {
			out.IsTruncated, out.NextContinuationToken = aws.Bool(true), aws.String(strconv.Itoa(to))
		}
	case workBucket:
		s.mu.Lock()
		for k, v := range s.work {
			if strings.HasPrefix(k, aws.ToString(in.Prefix)) {
				out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(v)})
			}
		}
		s.mu.Unlock()
		sort.Slice(out.Contents, func(a, b int) bool { return *out.Contents[a].Key < *out.Contents[b].Key })
	}
	out.IsTruncated = aws.Bool(out.NextContinuationToken != nil)
	return out, nil
}

func (s *syntheticS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	b, k := aws.ToString(in.Bucket), aws.ToString(in.Key)
	switch b {
	case srcBucket:
		i, ok := synthIndex(k)
		if !ok || i >= s.n {
			return nil, notFound()
		}
		return &s3.HeadObjectOutput{ContentLength: aws.Int64(int64(synthSize(i))), ETag: aws.String(fmt.Sprintf(`"%d"`, i)), LastModified: aws.Time(epoch),
			ChecksumCRC32: aws.String(b64(crc32.ChecksumIEEE(synthBody(i)))), ChecksumType: types.ChecksumTypeFullObject}, nil
	case dstBucket:
		s.mu.Lock()
		defer s.mu.Unlock()
		if size, ok := s.done[k]; ok {
			return &s3.HeadObjectOutput{ContentLength: aws.Int64(size), ETag: aws.String(`"archive"`), ChecksumCRC32: aws.String(s.doneCRC[k])}, nil
		}
	}
	return nil, notFound()
}

func (s *syntheticS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b, k := aws.ToString(in.Bucket), aws.ToString(in.Key)
	var body []byte
	switch b {
	case srcBucket:
		i, ok := synthIndex(k)
		if !ok || i >= s.n {
			return nil, &types.NoSuchKey{}
		}
		body = synthBody(i)
	case workBucket:
		s.mu.Lock()
		_, ok := s.work[k]
		s.mu.Unlock()
		if !ok {
			return nil, &types.NoSuchKey{}
		}
		// Read from the file as a server sends it, not held whole: the
		// entries file of a million entries is hundreds of MiB, which the
		// handler reading it would seem to hold.
		f, err := os.Open(s.file(k))
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		from, to := int64(0), st.Size()-1
		if r := aws.ToString(in.Range); r != "" {
			if _, err := fmt.Sscanf(r, "bytes=%d-%d", &from, &to); err != nil || from > to || to >= st.Size() {
				f.Close()
				return nil, fmt.Errorf("fake: bad range %q of %d bytes", r, st.Size())
			}
		}
		body := io.NewSectionReader(f, from, to+1-from)
		return &s3.GetObjectOutput{Body: readCloser{body, f}, ContentLength: aws.Int64(body.Size())}, nil
	default:
		return nil, &types.NoSuchKey{}
	}
	if r := aws.ToString(in.Range); r != "" {
		var from, to int
		if _, err := fmt.Sscanf(r, "bytes=%d-%d", &from, &to); err != nil || from > to || to >= len(body) {
			return nil, fmt.Errorf("fake: bad range %q of %d bytes", r, len(body))
		}
		body = body[from : to+1]
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body)))}, nil
}

// readCloser reads a file's section and closes the file.
type readCloser struct {
	io.Reader
	io.Closer
}

// PutObject streams the body to its file: the server holds what is put,
// not the handler putting it, whose memory is what the test measures.
func (s *syntheticS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	k := aws.ToString(in.Key)
	if aws.ToString(in.Bucket) != workBucket {
		_, err := io.Copy(io.Discard, in.Body)
		return &s3.PutObjectOutput{ETag: aws.String(`"put"`)}, err
	}
	f, err := os.Create(s.file(k))
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(f, in.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.work[k] = n
	s.mu.Unlock()
	return &s3.PutObjectOutput{ETag: aws.String(`"put"`)}, nil
}

func (s *syntheticS3) file(key string) string {
	return filepath.Join(s.dir, url.PathEscape(key))
}

func (s *syntheticS3) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range in.Delete.Objects {
		delete(s.work, aws.ToString(o.Key))
		os.Remove(s.file(aws.ToString(o.Key)))
	}
	return &s3.DeleteObjectsOutput{}, nil
}

func (s *syntheticS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.work, aws.ToString(in.Key))
	delete(s.done, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

func (s *syntheticS3) CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("upload-1")}, nil
}

func (s *syntheticS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	h := crc32.NewIEEE()
	n, err := io.Copy(h, in.Body)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.parts[aws.ToInt32(in.PartNumber)] = n
	s.mu.Unlock()
	return &s3.UploadPartOutput{ETag: aws.String(fmt.Sprintf(`"part-%d"`, aws.ToInt32(in.PartNumber))), ChecksumCRC32: aws.String(b64(h.Sum32()))}, nil
}

func (s *syntheticS3) UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	return nil, fmt.Errorf("fake: no copies expected (every object is tiny)")
}

func (s *syntheticS3) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var size int64
	for _, p := range in.MultipartUpload.Parts {
		n, ok := s.parts[aws.ToInt32(p.PartNumber)]
		if !ok {
			return nil, fmt.Errorf("fake: part %d was not uploaded", aws.ToInt32(p.PartNumber))
		}
		size += n
	}
	if len(in.MultipartUpload.Parts) != len(s.parts) || size != aws.ToInt64(in.MpuObjectSize) {
		return nil, fmt.Errorf("fake: complete with %d parts / %d bytes, uploaded %d parts / want %d bytes", len(in.MultipartUpload.Parts), aws.ToInt64(in.MpuObjectSize), len(s.parts), size)
	}
	s.done[aws.ToString(in.Key)] = size
	s.doneCRC[aws.ToString(in.Key)] = aws.ToString(in.ChecksumCRC32)
	return &s3.CompleteMultipartUploadOutput{ETag: aws.String(`"archive"`)}, nil
}

func (s *syntheticS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	s.mu.Lock()
	s.parts = map[int32]int64{}
	s.mu.Unlock()
	return &s3.AbortMultipartUploadOutput{}, nil
}

func (s *syntheticS3) ListParts(context.Context, *s3.ListPartsInput, ...func(*s3.Options)) (*s3.ListPartsOutput, error) {
	return nil, &types.NoSuchUpload{}
}

// ListMultipartUploads: the fake keeps no uploads in the work bucket (it
// makes no chain rounds), so there are none to list.
func (s *syntheticS3) ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return &s3.ListMultipartUploadsOutput{}, nil
}
