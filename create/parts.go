package create

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/plan"
)

// PartResult is what the finalizer needs of one built part.
type PartResult struct {
	Part int `json:"part"`
	// Archive is, in a split run, the plan.Part.Archive whose upload the
	// part is of, and Part is its number there.
	Archive       int    `json:"archive,omitempty"`
	ETag          string `json:"etag"`
	ChecksumCRC32 string `json:"checksumCRC32"`
	// CRCs maps entry indexes to the CRC-32s the worker computed, as 8 hex
	// digits. They grow with the part's entries, 16,000 for a 16 MiB part of
	// 1 KiB objects, so they never travel in the batch's output, which Step
	// Functions caps at 256 KiB. Handle writes them to BatchResult.CRCsKey.
	CRCs          map[string]string `json:"-"`
	StreamedBytes int64             `json:"streamedBytes"`
	CopiedBytes   int64             `json:"copiedBytes"`
}

// addCRCs reports entries' CRC-32s, by entry index, to the finalizer.
func (r *PartResult) addCRCs(crcs map[plan.EntryIndex]uint32) {
	if len(crcs) == 0 {
		return
	}
	if r.CRCs == nil {
		r.CRCs = make(map[string]string, len(crcs))
	}
	for i, v := range crcs {
		r.CRCs[strconv.Itoa(int(i))] = fmt.Sprintf("%08x", v)
	}
}

// archiveUpload is the archive's multipart upload as the worker and the
// finalizer send parts to it. It holds the client, the settings that bound
// the reads and the job that names the upload.
type archiveUpload struct {
	c   S3
	cfg Config
	job *Job
}

// uploadPart assembles an upload part and sends it with its CRC-32, which S3
// checks. dir is nil except for the final parts, since worker parts end
// before the directory.
func (u archiveUpload) uploadPart(ctx context.Context, part *plan.Part, entries []plan.PlacedEntry, tails map[plan.EntryIndex]plan.Tail, dir *finalDirectory) (*PartResult, error) {
	d := plan.Directory{Offset: part.End}
	if dir != nil {
		d = plan.Directory{Offset: dir.offset, Read: dir.read}
	}
	buf, computed, err := plan.BuildPart(part, entries, d, func(reads []plan.DataRead) error {
		return forEach(ctx, u.cfg.GetConcurrency, len(reads), func(ctx context.Context, k int) error {
			r := reads[k]
			return getRange(ctx, u.c, sourceOf(r.Entry.Source), r.From, r.Dst)
		})
	}, tails)
	if err != nil {
		return nil, err
	}
	r, err := sendPart(ctx, u.c, u.job, part.Number, buf)
	if err != nil {
		return nil, err
	}
	r.addCRCs(computed)
	return r, nil
}

// sendPart uploads buf as part number n with its CRC-32, and checks the
// CRC-32 S3 answers.
func sendPart(ctx context.Context, c S3, job *Job, n int, buf []byte) (*PartResult, error) {
	crc := crc32.ChecksumIEEE(buf)
	out, err := c.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &job.Destination.Bucket, Key: &job.Destination.Key, UploadId: &job.UploadID,
		PartNumber: aws.Int32(int32(n)), Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc)),
	})
	if err != nil {
		return nil, s3Error("UploadPart", job.Destination.Bucket, job.Destination.Key, false, err)
	}
	r := &PartResult{Part: n, ETag: aws.ToString(out.ETag), ChecksumCRC32: aws.ToString(out.ChecksumCRC32), StreamedBytes: int64(len(buf))}
	if r.ChecksumCRC32 == "" {
		r.ChecksumCRC32 = s3part.CRCBase64(crc)
	}
	if r.ChecksumCRC32 != s3part.CRCBase64(crc) {
		return nil, failure.Checksum("S3 reports CRC-32 %s for part %d, the bytes sent have %s", r.ChecksumCRC32, n, s3part.CRCBase64(crc))
	}
	return r, nil
}

// finalDirectory is the central directory in a final part. It says where
// the directory starts and how its bytes are had once the part's entries'
// CRC-32s are known.
type finalDirectory struct {
	offset int64
	read   func(computed map[plan.EntryIndex]uint32) ([]byte, error)
}
