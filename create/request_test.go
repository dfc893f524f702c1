package create

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
)

// FuzzDecodeRequest: DecodeRequest and Validate never panic, every refusal
// is a failure.RequestError, and an accepted request survives encoding and decoding
// unchanged and valid. Seeds: testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"source":{"bucket":"src","prefix":"p/"},"destination":{"bucket":"dst","key":"a.zip"}}`))
	f.Add([]byte(`{"requestObject":{"bucket":"ctl","key":"requests/x.json"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		if err != nil {
			assertRequestError(t, "DecodeRequest", err)
			return
		}
		verr := req.Validate()
		if verr != nil {
			assertRequestError(t, "Validate", verr)
			if again := req.Validate(); again == nil || again.Error() != verr.Error() {
				t.Fatalf("Validate is not deterministic: %v, then %v", verr, again)
			}
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(req); err != nil {
			t.Fatalf("an accepted request does not encode: %v", err)
		}
		req2, err := DecodeRequest(buf.Bytes())
		if err != nil {
			// Encoding may lengthen a document (U+2028 becomes \u2028); only
			// the size check may refuse the re-encoded request.
			if buf.Len() > MaxRequestBytes && strings.Contains(err.Error(), "at most") {
				return
			}
			t.Fatalf("re-encoded request %s is refused: %v", buf.Bytes(), err)
		}
		if err := req2.Validate(); err != nil {
			t.Fatalf("re-encoded request %s is invalid: %v", buf.Bytes(), err)
		}
		a, _ := json.Marshal(req)
		b, _ := json.Marshal(req2)
		if !bytes.Equal(a, b) {
			t.Fatalf("request changed in a round trip:\n%s\n%s", a, b)
		}
	})
}

func assertRequestError(t *testing.T, where string, err error) {
	t.Helper()
	var re *failure.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("%s: %T %v, want a RequestError", where, err, err)
	}
	if len(re.Problems) == 0 {
		t.Fatalf("%s: a failure.RequestError with no problem", where)
	}
	for _, p := range re.Problems {
		if strings.TrimSpace(p) == "" {
			t.Fatalf("%s: an empty problem in %q", where, re.Problems)
		}
	}
}

// FuzzPlannerManifest runs the planner over an arbitrary manifest, against
// an in-memory S3 in which every key under p/ exists (size and CRC-32
// derived from the key; keys containing "gone" do not). The planner never
// panics, refuses only with failure.RequestError or failure.LimitError, and never writes
// before it refuses. Seeds: testdata/fuzz/FuzzPlannerManifest.
func FuzzPlannerManifest(f *testing.F) {
	f.Add([]byte("key,size\np/a.txt,5\np/b.txt\n"))
	f.Add([]byte(`{"key":"p/x","name":"dir/x","crc32":"00000000"}` + "\n"))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		s := &fakePlannerS3{manifest: manifest}
		pl := &Planner{S3: s, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Config: Config{
			WorkBucket: "work", ControlBucket: "ctl", AllowedSources: []string{"src/p/"},
			AllowedDestinations: []string{"dst/out/"}, MaxEntries: 2000, MaxArchiveBytes: 1 << 40, HeadConcurrency: 4,
		}}
		req := []byte(`{"source":{"manifest":{"bucket":"ctl","key":"m.csv"},"bucket":"src"},"destination":{"bucket":"dst","key":"out/a.zip"},"options":{"duplicates":"suffix"}}`)
		job, err := pl.Plan(context.Background(), PlanInput{Request: req, Execution: "fuzz"})
		if err != nil {
			var re *failure.RequestError
			var le *failure.LimitError
			if !errors.As(err, &re) && !errors.As(err, &le) {
				t.Fatalf("refused with %T: %v", err, err)
			}
			if len(s.writes) > 0 {
				t.Fatalf("wrote %q before refusing: %v", s.writes, err)
			}
			return
		}
		// Plan files under the execution's work prefix and one upload, nothing else.
		uploads := 0
		for _, w := range s.writes {
			switch {
			case strings.HasPrefix(w, "CreateMultipartUpload s3://dst/out/"):
				uploads++
			case strings.HasPrefix(w, "PutObject s3://work/s3zip-work/fuzz/"):
			default:
				t.Fatalf("accepted, and wrote %q outside the work prefix and the destination", w)
			}
		}
		if uploads != 1 || job.UploadID == "" {
			t.Fatalf("accepted, but wrote %q", s.writes)
		}
	})
}

// fakeSize and fakeCRC are the size and CRC-32 of the fake object key.
func fakeSize(key string) int64 { return int64(len(key) % 13) }
func fakeCRC(key string) uint32 {
	return crc32.ChecksumIEEE(bytes.Repeat([]byte{byte(len(key))}, int(fakeSize(key))))
}

type fakePlannerS3 struct {
	manifest []byte
	mu       sync.Mutex
	writes   []string
}

func (s *fakePlannerS3) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b, k := aws.ToString(in.Bucket), aws.ToString(in.Key)
	var body []byte
	switch {
	case b == "ctl" && k == "m.csv":
		body = s.manifest
	case b == "src" && strings.HasPrefix(k, "p/") && !strings.Contains(k, "gone"):
		body = bytes.Repeat([]byte{byte(len(k))}, int(fakeSize(k)))
	default:
		return nil, &types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body)))}, nil
}

func (s *fakePlannerS3) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	b, k := aws.ToString(in.Bucket), aws.ToString(in.Key)
	if b != "src" || !strings.HasPrefix(k, "p/") || strings.Contains(k, "gone") {
		return nil, &types.NotFound{}
	}
	crc := fakeCRC(k)
	return &s3.HeadObjectOutput{
		ContentLength: aws.Int64(fakeSize(k)), ETag: aws.String(`"e"`),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc)), ChecksumType: types.ChecksumTypeFullObject,
	}, nil
}

func (s *fakePlannerS3) record(op, bucket, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, fmt.Sprintf("%s s3://%s/%s", op, bucket, key))
}

func (s *fakePlannerS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	s.record("PutObject", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return &s3.PutObjectOutput{}, nil
}

func (s *fakePlannerS3) ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return &s3.ListObjectsV2Output{}, nil
}

func (s *fakePlannerS3) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	s.record("CreateMultipartUpload", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("u1")}, nil
}

// The rest of PlannerS3: a planner over this fake never needs them (every
// source has a stored CRC-32, nothing is compressed, no create fails), so
// each is an error, or a recorded write.

var errFakeUnused = errors.New("fakePlannerS3: not expected in this test")

func (s *fakePlannerS3) DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	return nil, errFakeUnused
}

func (s *fakePlannerS3) ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return &s3.ListMultipartUploadsOutput{}, nil
}

func (s *fakePlannerS3) AbortMultipartUpload(_ context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	s.record("AbortMultipartUpload", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return &s3.AbortMultipartUploadOutput{}, nil
}
