package extract

// A copy job makes one STORED entry an object server-side, by ranged
// UploadPartCopy of the archive's bytes into a multipart upload.

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// copyEntry copies the entry's ranges into an upload created with CRC-32
// FULL_OBJECT, combines the CRC-32s S3 answers for them and completes the
// upload with the entry's, so that S3 checks every byte.
func (x *executor) copyEntry(ctx context.Context, it *Item, ranges []Range) error {
	if x.quirk.Load() {
		return x.copyPlain(ctx, it, ranges)
	}
	id, err := x.create(ctx, it, true)
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, len(ranges))
	var combined uint32
	for k, r := range ranges {
		out, err := x.copyPart(ctx, it, id, k, r)
		if err != nil {
			return err
		}
		answer := aws.ToString(out.CopyPartResult.ChecksumCRC32)
		sum, ok := s3part.DecodeCRC(answer)
		if !ok || x.untrusted(answer, r) {
			// The server cannot tell this range's CRC-32, as versitygw answers
			// a ranged copy of a checksummed object with the whole object's,
			// so a CRC-32 upload cannot be completed right. Copy without
			// checksums and check the bytes by reading them instead.
			x.quirk.Store(true)
			if _, err := x.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &x.dest, Key: &it.Key, UploadId: &id}); err == nil {
				x.ended(id)
			}
			return x.copyPlain(ctx, it, ranges)
		}
		combined = zipformat.CombineCRC(combined, sum, r.End-r.Start)
		parts[k] = types.CompletedPart{PartNumber: aws.Int32(int32(k + 1)), ETag: out.CopyPartResult.ETag, ChecksumCRC32: aws.String(answer)}
	}
	if err := copiedAsListed(it, combined); err != nil {
		return err
	}
	return x.complete(ctx, it, id, parts, true)
}

// copyPlain copies a STORED entry without S3 checksums, and checks its bytes
// against the entry's CRC-32 by reading them. It serves only where the
// server cannot answer a ranged copy's CRC-32.
func (x *executor) copyPlain(ctx context.Context, it *Item, ranges []Range) error {
	var combined uint32
	for _, r := range ranges {
		sum, err := x.rangeCRC(ctx, r)
		if err != nil {
			return fmt.Errorf("entry %q: %w", it.Name, err)
		}
		x.verifyRead.Add(r.End - r.Start)
		combined = zipformat.CombineCRC(combined, sum, r.End-r.Start)
	}
	if err := copiedAsListed(it, combined); err != nil {
		return err
	}
	id, err := x.create(ctx, it, false)
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, len(ranges))
	for k, r := range ranges {
		out, err := x.copyPart(ctx, it, id, k, r)
		if err != nil {
			return err
		}
		parts[k] = types.CompletedPart{PartNumber: aws.Int32(int32(k + 1)), ETag: out.CopyPartResult.ETag}
	}
	return x.complete(ctx, it, id, parts, false)
}

// copiedAsListed checks the CRC-32 of a STORED entry's bytes in the archive
// against the central directory's.
func copiedAsListed(it *Item, crc uint32) error {
	if crc == it.CRC32 {
		return nil
	}
	return failure.Checksum("entry %q: the archive's bytes %d-%d have CRC-32 %08x, the central directory says %08x: the archive is corrupt",
		it.Name, it.DataStart, it.DataStart+it.CompressedSize-1, crc, it.CRC32)
}

// copyPart copies the archive's range r into part k+1 of the entry's upload,
// pinned by the archive's ETag.
func (x *executor) copyPart(ctx context.Context, it *Item, id string, k int, r Range) (*s3.UploadPartCopyOutput, error) {
	out, err := x.c.UploadPartCopy(context.WithoutCancel(ctx), s3part.CopyPart(s3part.Part{Bucket: x.dest, Key: it.Key, UploadID: id, Number: int32(k + 1)},
		s3part.Pinned{Bucket: x.a.Bucket, Key: x.a.Key, ETag: x.a.ETag, Size: x.a.Size}, r.Start, r.End))
	if err != nil {
		return nil, fmt.Errorf("entry %q: copy archive bytes %d-%d into part %d of s3://%s/%s: %w", it.Name, r.Start, r.End-1, k+1, x.dest, it.Key, sourceChanged(err, x.a))
	}
	if out.CopyPartResult == nil {
		return nil, fmt.Errorf("entry %q: copy into part %d of s3://%s/%s: no result in S3's answer", it.Name, k+1, x.dest, it.Key)
	}
	return out, nil
}

// untrusted reports whether a copy's answered CRC-32 is the archive's stored
// whole-object CRC for a range that is not the whole object. Some servers,
// versitygw among them, answer a ranged copy of a checksummed object with it.
func (x *executor) untrusted(answer string, r Range) bool {
	return answer == "" || answer == x.a.ChecksumCRC32 && (r.Start != 0 || r.End != x.a.Size)
}

// rangeCRC reads a range of the archive for its CRC-32.
func (x *executor) rangeCRC(ctx context.Context, r Range) (uint32, error) {
	body, err := x.get(ctx, r)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	h := crc32.NewIEEE()
	if n, err := io.Copy(h, body); err != nil || n != r.End-r.Start {
		return 0, fmt.Errorf("read archive bytes %d-%d: got %d bytes: %v", r.Start, r.End-1, n, err)
	}
	return h.Sum32(), nil
}
