package s3test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// (i) What CRC32 does UploadPartCopy into a CRC32 upload answer with, by
// the checksum the source is stored with, for a whole copy and a range?
// This decides which answers a worker may take as the part's checksum.
func TestVersitygwFactsCopyAnswerBySourceChecksum(t *testing.T) {
	e := newFactEnv(t)
	p1, p2 := Bytes(uint64(11), 5<<20), Bytes(uint64(12), 1<<20)
	whole := append(append([]byte{}, p1...), p2...)
	e.srv.PutObject(t, bucket, "none", whole)
	e.srv.PutObject(t, bucket, "crc32-put", whole, WithChecksum(ChecksumCRC32))
	e.srv.PutObject(t, bucket, "crc64nvme-put", whole, WithChecksum(ChecksumCRC64NVME))
	e.srv.PutMultipartObject(t, bucket, "crc32-composite", [][]byte{p1, p2}, WithChecksum(ChecksumCRC32), WithChecksumType(types.ChecksumTypeComposite))
	e.srv.PutMultipartObject(t, bucket, "crc32-full-mpu", [][]byte{p1, p2}, WithChecksum(ChecksumCRC32), WithChecksumType(types.ChecksumTypeFullObject))
	e.srv.PutMultipartObject(t, bucket, "sha256-composite", [][]byte{p1, p2}, WithChecksum(ChecksumSHA256), WithChecksumType(types.ChecksumTypeComposite))
	const from, to = 1000, 5<<20 + 1000 // a range across the part boundary
	rng := fmt.Sprintf("bytes=%d-%d", from, to-1)

	for _, tc := range []struct {
		src         string
		whole, part string // the answer for a whole copy, for a range
	}{
		{"none", "bytes-crc", "bytes-crc"},
		{"crc64nvme-put", "bytes-crc", "bytes-crc"},
		{"sha256-composite", "bytes-crc", "bytes-crc"},
		// A stored CRC32 is copied as the part's, whatever was copied.
		{"crc32-put", "bytes-crc", "whole-source-crc"},
		{"crc32-full-mpu", "bytes-crc", "whole-source-crc"},
		{"crc32-composite", "composite-2", "composite-2"},
	} {
		for _, c := range []struct{ name, rng, want string }{{"whole", "", tc.whole}, {"range", rng, tc.part}} {
			id := e.create(t, "dst", types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject)
			out, err := e.copyPart(t, "dst", id, 1, tc.src, c.rng)
			if err != nil {
				t.Fatalf("copy %s of %s: %v", c.name, tc.src, err)
			}
			copied := whole
			if c.rng != "" {
				copied = whole[from:to]
			}
			got := aws.ToString(out.CopyPartResult.ChecksumCRC32)
			kind := "other:" + got
			switch {
			case got == "":
				kind = "none"
			case got == crc32b64(copied):
				kind = "bytes-crc"
			case got == crc32b64(whole):
				kind = "whole-source-crc"
			case strings.Contains(got, "-"):
				kind = "composite" + got[strings.LastIndexByte(got, '-'):]
			}
			fact(t, fmt.Sprintf("UploadPartCopy (%s) of a source stored with %s into a CRC32 upload answers", c.name, tc.src), kind, c.want)
			_, _ = e.c.AbortMultipartUpload(t.Context(), &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("dst"), UploadId: aws.String(id)})
		}
	}
}

// (j) A part streamed without holding it: an unseekable body, its CRC32
// given up front, the payload unsigned (over plain HTTP the SDK would read
// a body whole to sign it, and sends a trailing checksum only over HTTPS).
func TestVersitygwFactsStreamedUploadPart(t *testing.T) {
	e := newFactEnv(t)
	part := Bytes(uint64(13), 6<<20)
	unsigned := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	}
	stream := func() io.Reader { return io.MultiReader(bytes.NewReader(part)) } // not an io.Seeker
	for _, tc := range []struct {
		name string
		crc  *string
		opts []func(*s3.Options)
		want string
	}{
		{"right CRC32, unsigned payload", aws.String(crc32b64(part)), []func(*s3.Options){unsigned}, "ok"},
		{"wrong CRC32, unsigned payload", aws.String(crc32b64([]byte("other"))), []func(*s3.Options){unsigned}, "400 BadDigest"},
		{"no CRC32 (SDK computes it), signed payload", nil, nil, "client: unseekable stream is not supported without TLS and trailing checksum"},
	} {
		id := e.create(t, "dst", types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject)
		in := &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("dst"), UploadId: aws.String(id), PartNumber: aws.Int32(1),
			Body: stream(), ContentLength: aws.Int64(int64(len(part))), ChecksumCRC32: tc.crc}
		if tc.crc == nil {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
		}
		out, err := e.c.UploadPart(t.Context(), in, tc.opts...)
		got := outcome(err)
		if err != nil && strings.Contains(err.Error(), "unseekable stream is not supported without TLS and trailing checksum") {
			got = "client: unseekable stream is not supported without TLS and trailing checksum"
		}
		if err == nil && aws.ToString(out.ChecksumCRC32) != crc32b64(part) {
			got = "ok, but answered " + aws.ToString(out.ChecksumCRC32)
		}
		fact(t, "UploadPart of an unseekable body over HTTP, "+tc.name, got, tc.want, err)
		_, _ = e.c.AbortMultipartUpload(t.Context(), &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("dst"), UploadId: aws.String(id)})
	}
}
