// Package s3part is a multipart upload's parts as S3's requests write
// them: the limits a part is cut to (MinPartSize, MaxPartSize, MaxParts),
// the UploadPartCopy of a byte range of a source pinned to its planned
// version or ETag (CopyPart, and the x-amz-copy-source header it sends:
// CopySource, ParseCopySource), and a CRC-32 in S3's base64 (CRCBase64,
// DecodeCRC), which S3 checks a part, an object and a whole upload by.
package s3part

import (
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/plan"
)

// S3's multipart upload limits. The numbers are written in plan, the pure
// core that cuts parts to them and must not import this (AWS) package;
// these names are the handlers' way to them.
const (
	MinPartSize = plan.MinPartSize // every part but the last
	MaxPartSize = plan.MaxPartSize // also the largest UploadPartCopy range
	MaxParts    = plan.MaxParts    // parts of one upload
)

// CRCBase64 is a CRC-32 as S3 writes it: base64 of 4 big-endian bytes.
func CRCBase64(crc uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], crc)
	return base64.StdEncoding.EncodeToString(b[:])
}

// DecodeCRC reads a CRC-32 as S3 writes it; a composite ("…-N") is not one.
func DecodeCRC(v string) (uint32, bool) {
	if v == "" || strings.Contains(v, "-") {
		return 0, false
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b), true
}

// Pinned is a source object as it was planned: a copy from it must still
// find that version (VersionID) or those bytes (ETag, sent as
// x-amz-copy-source-if-match), or fail rather than copy something else.
type Pinned struct {
	Bucket, Key     string
	VersionID, ETag string // either may be empty
	Size            int64  // the whole object's
}

// Part is one part of a multipart upload.
type Part struct {
	Bucket, Key, UploadID string
	Number                int32
}

// CopyPart is the UploadPartCopy of src's bytes [from, to) into part dst:
// no range header when that is the whole object (partwork.CopyRange says when
// a range may be sent at all).
func CopyPart(dst Part, src Pinned, from, to int64) *s3.UploadPartCopyInput {
	in := &s3.UploadPartCopyInput{
		Bucket: aws.String(dst.Bucket), Key: aws.String(dst.Key), UploadId: aws.String(dst.UploadID),
		PartNumber: aws.Int32(dst.Number),
		CopySource: aws.String(CopySource(src.Bucket, src.Key, src.VersionID)),
	}
	if rng, _ := partwork.CopyRange(from, to, src.Size); rng != "" {
		in.CopySourceRange = aws.String(rng)
	}
	if src.ETag != "" {
		in.CopySourceIfMatch = aws.String(src.ETag)
	}
	return in
}
