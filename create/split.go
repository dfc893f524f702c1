package create

// In a split run, asked for with options.splitSize or options.splitEntries,
// one execution writes several archives, name-0001.zip, name-0002.zip, …,
// each a whole ZIP of its own, from one split plan that plan/split.go makes.
// Each archive has its own multipart upload, and every part job names its
// archive's in plan.PartJob.Upload, so the one Map builds all of them. The
// upload record lists them all so that Abort aborts every one. The finalizer
// completes them one after another and deletes the ones it completed when a
// later one fails, so a failed split run leaves none of its archives.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/plan"
)

// ArchiveKey returns the key of archive k, counted from 0, of a split run
// writing key. It is key with a 4-digit number before the extension, as
// photos-0001.zip for photos.zip, or at the end when key has none.
func ArchiveKey(key string, k int) string {
	ext := path.Ext(key)
	if strings.Contains(ext, "/") || ext == key[strings.LastIndex(key, "/")+1:] {
		ext = "" // a dot in a folder's name, or a name that is all extension
	}
	return fmt.Sprintf("%s-%04d%s", strings.TrimSuffix(key, ext), k+1, ext)
}

// uploadRecord is what the planner records at Job.uploadRecordKey of the
// uploads it created, the job and a split run's archives' uploads.
type uploadRecord struct {
	Job
	Archives []plan.Upload `json:"archives,omitempty"`
}

// forArchive returns the job as the parts of one archive of a split run see
// it, with the archive's key and upload in place of the run's.
func (j *Job) forArchive(u *plan.Upload) *Job {
	if u == nil {
		return j
	}
	a := *j
	a.Destination.Key, a.UploadID = u.Key, u.UploadID
	return &a
}

// partKey names a part among a split run's by its number, after its
// archive's number when it is not the first archive's, so that a run of one
// archive names a part by its number alone.
func partKey(archive, part int) string {
	if archive == 0 {
		return strconv.Itoa(part)
	}
	return strconv.Itoa(archive+1) + "/" + strconv.Itoa(part)
}

// readUploadRecord reads what the planner recorded, or returns nil when it
// recorded nothing.
func readUploadRecord(ctx context.Context, c S3, bucket, prefix string) (*uploadRecord, error) {
	doc, err := getBytes(ctx, c, bucket, prefix+"upload.json", 4<<20)
	if err != nil {
		if s3err.NotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var rec uploadRecord
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, fmt.Errorf("upload record s3://%s/%supload.json: %w", bucket, prefix, err)
	}
	return &rec, nil
}

// doneKey returns the key where the finalizer records archive k of a split
// run as completed.
func doneKey(workPrefix string, k int) string {
	return fmt.Sprintf("%sdone/%04d.json", workPrefix, k+1)
}

// completedArchive is the record of an archive the finalizer completes. It
// is written before the completion with the archive's size and CRC-32 and
// no ETag, and for a split run's archive again after it with the ETag. Abort's
// discardArchives then finds an archive a failed run completed however the
// finalizer ended, even in the instant between the completion and its
// record.
type completedArchive struct {
	Key  string `json:"key"`
	ETag string `json:"etag,omitempty"`
	// Size and CRC32, in 8 hex digits, are the archive's. With no ETag, the
	// object at Key is this run's if it has them, since the completion
	// stores the CRC-32 as the object's full-object checksum.
	Size  int64  `json:"size,omitempty"`
	CRC32 string `json:"crc32,omitempty"`
}

// ours says whether the object h describes is the archive the record is
// of, by the ETag it was completed with or, before that was recorded, by
// its size and CRC-32. With overwrite, an archive identical byte for byte
// to the one the run would have written is taken for it.
func (c *completedArchive) ours(h *s3.HeadObjectOutput) bool {
	if c.ETag != "" {
		return aws.ToString(h.ETag) == c.ETag
	}
	crc, ok := fullObjectCRC(h)
	return ok && c.CRC32 != "" && fmt.Sprintf("%08x", crc) == c.CRC32 && aws.ToInt64(h.ContentLength) == c.Size
}
