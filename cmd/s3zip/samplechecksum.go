package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// sampleChecksum is how `sample` uploads an object, and so which checksum
// S3 keeps of it. The kinds are what the SDKs and the CLI do by default, a
// single PUT with CRC-32; what older clients did, with no checksum; the
// other algorithms; and the multipart uploads of the upload managers. Those
// send 8 MiB parts, each with its CRC-32, and S3 keeps a composite "…-N" or
// the full object's CRC-32.
type sampleChecksum struct {
	name      string
	alg       types.ChecksumAlgorithm // "" for none
	multipart types.ChecksumType      // "" for a single PUT
}

// samplePartSize is the part size of the AWS CLI's and SDKs' upload managers.
const samplePartSize = 8 << 20

var sampleChecksumKinds = []sampleChecksum{
	{"none", "", ""},
	{"crc32", types.ChecksumAlgorithmCrc32, ""},
	{"crc32c", types.ChecksumAlgorithmCrc32c, ""},
	{"crc64nvme", types.ChecksumAlgorithmCrc64nvme, ""},
	{"sha256", types.ChecksumAlgorithmSha256, ""},
	{"composite", types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite},
	{"full-multipart", types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject},
}

func sampleChecksumNames() []string {
	var names []string
	for _, k := range sampleChecksumKinds {
		names = append(names, k.name)
	}
	return append(names, "mixed")
}

// sampleChecksums returns the kinds a --checksum value names, one kind or
// every kind for mixed.
func sampleChecksums(name string) ([]sampleChecksum, error) {
	if name == "mixed" {
		return sampleChecksumKinds, nil
	}
	for _, k := range sampleChecksumKinds {
		if k.name == name {
			return []sampleChecksum{k}, nil
		}
	}
	return nil, usageErrorf("sample: --checksum %q: want one of %s", name, strings.Join(sampleChecksumNames(), ", "))
}

// sampleObject is one object `sample` uploads.
type sampleObject struct {
	bucket, key string
	body        []byte
}

// put uploads the object as a client of this kind would.
func (k sampleChecksum) put(ctx context.Context, c *s3.Client, o sampleObject) error {
	bucket, key, body := o.bucket, o.key, o.body
	if k.multipart == "" {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))), ChecksumAlgorithm: k.alg})
		return err
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key, ChecksumAlgorithm: k.alg, ChecksumType: k.multipart})
	if err != nil {
		return err
	}
	parts, err := k.putParts(ctx, c, o, aws.ToString(up.UploadId))
	if err == nil {
		in := &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
		if k.multipart == types.ChecksumTypeFullObject {
			in.ChecksumType = k.multipart
		}
		if _, err = c.CompleteMultipartUpload(ctx, in); err == nil {
			return nil
		}
	}
	_, _ = c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId})
	return err
}

// putParts sends body in samplePartSize parts, one after another. It sends
// at least one part, possibly empty.
func (k sampleChecksum) putParts(ctx context.Context, c *s3.Client, o sampleObject, id string) ([]types.CompletedPart, error) {
	bucket, key, body := o.bucket, o.key, o.body
	var parts []types.CompletedPart
	for n, off := int32(1), 0; n == 1 || off < len(body); n, off = n+1, off+samplePartSize {
		b := body[off:min(off+samplePartSize, len(body))]
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))), ChecksumAlgorithm: k.alg})
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", n, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
	}
	return parts, nil
}
