package extract

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/internal/s3x"
	"hash/crc32"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/archive"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// Client is the part of the S3 API an extraction uses; *s3.Client has it.
type Client interface {
	archive.Client
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
}

// Request is one extraction.
type Request struct {
	Bucket, Key string // the archive
	DestBucket  string
	Prefix      string // ends in "/" or is empty
	Overwrite   bool
	Workers     int // jobs run at once (default 8)
	// WorkBucket holds the jobs and results while the run lasts (default
	// DestBucket), under WorkPrefix (default s3zip-work/).
	WorkBucket, WorkPrefix string
	Execution              string // names the run (default cli-<time>)
	Options
}

// Written is one object an extraction wrote.
type Written struct {
	Key   string `json:"key"`
	Size  int64  `json:"size"`
	CRC32 string `json:"crc32"` // 8 hex digits
}

// Result is what an extraction did.
type Result struct {
	Archive   string    `json:"archive"`
	ETag      string    `json:"etag"`
	Entries   int       `json:"entries"` // in the central directory
	Plan      *Plan     `json:"-"`
	Objects   []Written `json:"objects"`
	Skipped   []Skipped `json:"skipped,omitempty"`
	Report    string    `json:"report"`
	Streamed  int64     `json:"streamedBytes"` // archive bytes read by workers (data only)
	Copied    int64     `json:"copiedBytes"`   // archive bytes copied server-side
	Extracted int64     `json:"extractedBytes"`
	// VerifyRead is archive bytes read only to check copies, on servers
	// that cannot answer a ranged copy's CRC-32 (0 on AWS).
	VerifyRead int64 `json:"verifyReadBytes"`
}

// ExistsError lists objects an extraction would replace.
type ExistsError struct {
	Bucket string
	Keys   []string
	// Appeared: an --overwrite run met them after planning, when they were
	// free; it replaces only what was there when it planned.
	Appeared bool
}

func (e *ExistsError) Error() string {
	shown := e.Keys[:min(len(e.Keys), 20)]
	more := ""
	if len(e.Keys) > len(shown) {
		more = fmt.Sprintf(" … and %d more", len(e.Keys)-len(shown))
	}
	if e.Appeared {
		return fmt.Sprintf("%d objects appeared in s3://%s where the archive's entries would go after the extraction was planned: %s%s (another writer is using the prefix; --overwrite replaces only what was there when the run planned: run again)",
			len(e.Keys), e.Bucket, strings.Join(shown, ", "), more)
	}
	return fmt.Sprintf("%d objects already exist in s3://%s where the archive's entries would go: %s%s (use --overwrite to replace them)",
		len(e.Keys), e.Bucket, strings.Join(shown, ", "), more)
}

// ChecksumError says extracted bytes do not have the CRC-32 the central
// directory gives: the archive is corrupt (or changed).
type ChecksumError struct{ Msg string }

func (e *ChecksumError) Error() string { return e.Msg }

// existingKeys lists the destination prefix and returns the keys of want
// that hold an object already.
func existingKeys(ctx context.Context, c Client, bucket, prefix string, want map[string]bool) ([]string, error) {
	keys, err := listKeys(ctx, c, bucket, prefix)
	if err != nil {
		return nil, fmt.Errorf("check for existing objects: %w", err)
	}
	var exists []string
	for _, k := range keys {
		if want[k] {
			exists = append(exists, k)
		}
	}
	return exists, nil
}

// executor runs jobs and remembers what it began and wrote. Writes are not
// cancelled with the batch (a failing job or an interrupt): a write cut off
// mid-request may still land on the server, so every write in flight is
// let finish and its answer recorded. Cancelling stops new jobs and reads.
type executor struct {
	c   Client
	a   *archive.Archive
	ex  *Extraction
	req Request

	mu      sync.Mutex
	uploads map[string]string // upload ID → key, while open
	written []Written
	// quirk: the server answers ranged copies with a wrong CRC-32, so
	// copies are checked by reading instead.
	quirk      atomic.Bool
	verifyRead atomic.Int64 // bytes read only to check copies
}

func newExecutor(c Client, ex *Extraction) *executor {
	return &executor{c: c, a: ex.archive(), ex: ex, req: Request{DestBucket: ex.DestBucket, Prefix: ex.Prefix}, uploads: map[string]string{}}
}

// alreadyOurs says whether a write refused by If-None-Match met an object
// this execution wrote before (a batch run again): then it counts as written.
func (x *executor) alreadyOurs(ctx context.Context, err error, it *Item) bool {
	if !s3ref.IsCode(err, "PreconditionFailed") {
		return false
	}
	h, herr := x.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &x.req.DestBucket, Key: &it.Key})
	return herr == nil && h.Metadata[ExecutionMetadata] == x.ex.Execution && aws.ToInt64(h.ContentLength) == it.Size
}

// abortOpen aborts the uploads still open (a failed batch).
func (x *executor) abortOpen(ctx context.Context) {
	x.mu.Lock()
	defer x.mu.Unlock()
	d := x.req.DestBucket
	for id, key := range x.uploads {
		if _, err := x.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d, Key: aws.String(key), UploadId: aws.String(id)}); err == nil || s3ref.IsCode(err, "NoSuchUpload") {
			delete(x.uploads, id)
		}
	}
}

func (x *executor) began(key, id string) {
	x.mu.Lock()
	x.uploads[id] = key
	x.mu.Unlock()
}

func (x *executor) ended(id string) {
	x.mu.Lock()
	delete(x.uploads, id)
	x.mu.Unlock()
}

func (x *executor) wrote(it *Item) {
	x.mu.Lock()
	x.written = append(x.written, Written{Key: it.Key, Size: it.Size, CRC32: fmt.Sprintf("%08x", it.CRC32)})
	x.mu.Unlock()
}

func (x *executor) sortedWritten() []Written {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := append([]Written(nil), x.written...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (x *executor) run(ctx context.Context, j Job) error {
	switch j.Kind {
	case KindCopy:
		return x.copyEntry(ctx, &j.Items[0], j.Ranges)
	case KindRead:
		return x.readGroup(ctx, &j)
	}
	return fmt.Errorf("unknown job kind %q", j.Kind)
}

func (x *executor) metadata(it *Item) map[string]string {
	return map[string]string{"mtime": it.Modified.UTC().Format(time.RFC3339), ExecutionMetadata: x.ex.Execution}
}

// copyEntry makes a STORED entry an object server-side.
func (x *executor) copyEntry(ctx context.Context, it *Item, ranges []Range) error {
	if x.quirk.Load() {
		return x.copyPlain(ctx, it, ranges)
	}
	d := x.req.DestBucket
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
		sum, ok := s3x.DecodeCRC(answer)
		if !ok || x.untrusted(answer, r) {
			// The server cannot tell this range's CRC-32 (versitygw answers
			// a ranged copy of a checksummed object with the whole object's):
			// a CRC-32 upload cannot be completed right. Copy without
			// checksums and check the bytes by reading them instead.
			x.quirk.Store(true)
			if _, err := x.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &d, Key: &it.Key, UploadId: &id}); err == nil {
				x.ended(id)
			}
			return x.copyPlain(ctx, it, ranges)
		}
		if k == 0 {
			combined = sum
		} else {
			combined = zipformat.CombineCRC(combined, sum, r.End-r.Start)
		}
		parts[k] = types.CompletedPart{PartNumber: aws.Int32(int32(k + 1)), ETag: out.CopyPartResult.ETag, ChecksumCRC32: aws.String(answer)}
	}
	if combined != it.CRC32 {
		return &ChecksumError{fmt.Sprintf("entry %q: the archive's bytes %d-%d have CRC-32 %08x, the central directory says %08x: the archive is corrupt", it.Name, it.DataStart, it.DataStart+it.CompressedSize-1, combined, it.CRC32)}
	}
	return x.complete(ctx, it, id, parts, true)
}

// copyPlain copies a STORED entry without S3 checksums, and checks its bytes
// against the entry's CRC-32 by reading them (only where the server cannot
// answer a ranged copy's CRC-32).
func (x *executor) copyPlain(ctx context.Context, it *Item, ranges []Range) error {
	var combined uint32
	for k, r := range ranges {
		sum, err := x.rangeCRC(ctx, r)
		if err != nil {
			return fmt.Errorf("entry %q: %w", it.Name, err)
		}
		x.verifyRead.Add(r.End - r.Start)
		if k == 0 {
			combined = sum
		} else {
			combined = zipformat.CombineCRC(combined, sum, r.End-r.Start)
		}
	}
	if combined != it.CRC32 {
		return &ChecksumError{fmt.Sprintf("entry %q: the archive's bytes %d-%d have CRC-32 %08x, the central directory says %08x: the archive is corrupt", it.Name, it.DataStart, it.DataStart+it.CompressedSize-1, combined, it.CRC32)}
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

func (x *executor) create(ctx context.Context, it *Item, checksum bool) (string, error) {
	d := x.req.DestBucket
	in := &s3.CreateMultipartUploadInput{Bucket: &d, Key: &it.Key, ContentType: aws.String(it.ContentType), Metadata: x.metadata(it)}
	if checksum {
		in.ChecksumAlgorithm, in.ChecksumType = types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject
	}
	// Not cancelled with the run: an upload S3 creates must be known, to
	// be aborted.
	cr, err := x.c.CreateMultipartUpload(context.WithoutCancel(ctx), in)
	if err != nil {
		return "", fmt.Errorf("entry %q: create upload for s3://%s/%s: %w", it.Name, d, it.Key, err)
	}
	id := aws.ToString(cr.UploadId)
	x.began(it.Key, id)
	return id, nil
}

func (x *executor) copyPart(ctx context.Context, it *Item, id string, k int, r Range) (*s3.UploadPartCopyOutput, error) {
	d := x.req.DestBucket
	out, err := x.c.UploadPartCopy(context.WithoutCancel(ctx), s3x.CopyPart(s3x.Part{Bucket: d, Key: it.Key, UploadID: id, Number: int32(k + 1)},
		s3x.Pinned{Bucket: x.a.Bucket, Key: x.a.Key, ETag: x.a.ETag, Size: x.a.Size}, r.Start, r.End))
	if err != nil {
		return nil, fmt.Errorf("entry %q: copy archive bytes %d-%d into part %d of s3://%s/%s: %w", it.Name, r.Start, r.End-1, k+1, d, it.Key, sourceChanged(err, x.a))
	}
	if out.CopyPartResult == nil {
		return nil, fmt.Errorf("entry %q: copy into part %d of s3://%s/%s: no result in S3's answer", it.Name, k+1, d, it.Key)
	}
	return out, nil
}

func (x *executor) complete(ctx context.Context, it *Item, id string, parts []types.CompletedPart, checksum bool) error {
	d := x.req.DestBucket
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &d, Key: &it.Key, UploadId: &id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		MpuObjectSize:   aws.Int64(it.Size),
	}
	if checksum {
		in.ChecksumCRC32, in.ChecksumType = aws.String(s3x.CRCBase64(it.CRC32)), types.ChecksumTypeFullObject
	}
	if !it.Replaces {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := x.c.CompleteMultipartUpload(context.WithoutCancel(ctx), in); err != nil {
		if !x.alreadyOurs(context.WithoutCancel(ctx), err, it) {
			return fmt.Errorf("entry %q: complete s3://%s/%s with CRC-32 %08x: %w", it.Name, d, it.Key, it.CRC32, x.classify(err, d, it.Key))
		}
		_, _ = x.c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &d, Key: &it.Key, UploadId: &id})
	}
	x.ended(id)
	x.wrote(it)
	return nil
}

// untrusted reports whether a copy's answered CRC-32 is the archive's stored
// whole-object CRC for a range that is not the whole object: some servers
// (versitygw) answer a ranged copy of a checksummed object with it.
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

func (x *executor) get(ctx context.Context, r Range) (io.ReadCloser, error) {
	out, err := x.c.GetObject(ctx, &s3.GetObjectInput{
		Bucket: &x.a.Bucket, Key: &x.a.Key, IfMatch: aws.String(x.a.ETag),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.Start, r.End-1)),
	})
	if err != nil {
		return nil, fmt.Errorf("get %s bytes %d-%d: %w", x.a, r.Start, r.End-1, sourceChanged(err, x.a))
	}
	return out.Body, nil
}

// largeObject is the size from which an inflated entry is uploaded in parts
// rather than buffered for one PutObject.
const largeObject = 64 << 20

// readGroup reads neighbouring entries with one ranged GET and writes each.
func (x *executor) readGroup(ctx context.Context, j *Job) error {
	r := j.Ranges[0]
	var body io.ReadCloser = io.NopCloser(bytes.NewReader(nil))
	if r.End > r.Start {
		var err error
		if body, err = x.get(ctx, r); err != nil {
			return err
		}
	}
	defer body.Close()
	pos := r.Start
	for k := range j.Items {
		it := &j.Items[k]
		if _, err := io.CopyN(io.Discard, body, it.Offset-pos); err != nil {
			return fmt.Errorf("read %s up to entry %q: %w", x.a, it.Name, err)
		}
		var fixed [30]byte
		if _, err := io.ReadFull(body, fixed[:]); err != nil {
			return fmt.Errorf("read %s: local header of entry %q at %d: %w", x.a, it.Name, it.Offset, err)
		}
		if binary.LittleEndian.Uint32(fixed[:]) != 0x04034b50 {
			return &archive.FormatError{Bucket: x.a.Bucket, Key: x.a.Key, Offset: it.Offset, What: fmt.Sprintf("entry %q: no local header (signature 0x04034b50 missing)", it.Name)}
		}
		hlen := int64(30 + int(binary.LittleEndian.Uint16(fixed[26:])) + int(binary.LittleEndian.Uint16(fixed[28:])))
		it.DataStart = it.Offset + hlen
		if it.DataStart+it.CompressedSize > it.Bound {
			return &archive.FormatError{Bucket: x.a.Bucket, Key: x.a.Key, Offset: it.Offset, What: fmt.Sprintf(
				"entry %q: its %d-byte local header and %d bytes of data end at %d, past the next entry at %d (overlapping entries)", it.Name, hlen, it.CompressedSize, it.DataStart+it.CompressedSize, it.Bound)}
		}
		if _, err := io.CopyN(io.Discard, body, hlen-30); err != nil {
			return fmt.Errorf("read %s: local header of entry %q: %w", x.a, it.Name, err)
		}
		src := io.LimitReader(body, it.CompressedSize)
		if err := x.writeEntry(ctx, it, src); err != nil {
			return err
		}
		// Whatever the decoder left of the entry's range (it never needs more).
		if _, err := io.Copy(io.Discard, src); err != nil {
			return fmt.Errorf("read %s entry %q: %w", x.a, it.Name, err)
		}
		pos = it.DataStart + it.CompressedSize
	}
	return nil
}

// writeEntry decodes an entry's data from src, checks its size and CRC-32
// and writes it.
func (x *executor) writeEntry(ctx context.Context, it *Item, src io.Reader) error {
	var dec io.Reader = src
	if it.Method == archive.MethodDeflate {
		fr := flate.NewReader(src)
		defer fr.Close()
		dec = fr
	}
	if it.Size >= largeObject {
		return x.uploadLarge(ctx, it, dec)
	}
	data := make([]byte, it.Size)
	if _, err := io.ReadFull(dec, data); err != nil {
		return &ChecksumError{fmt.Sprintf("entry %q: decoding %d bytes: %v: the archive is corrupt", it.Name, it.Size, err)}
	}
	if n, _ := io.Copy(io.Discard, io.LimitReader(dec, 1)); n != 0 {
		return &ChecksumError{fmt.Sprintf("entry %q decodes to more than the %d bytes the central directory says: the archive is corrupt", it.Name, it.Size)}
	}
	if got := crc32.ChecksumIEEE(data); got != it.CRC32 {
		return &ChecksumError{fmt.Sprintf("entry %q decodes to CRC-32 %08x, the central directory says %08x: the archive is corrupt", it.Name, got, it.CRC32)}
	}
	d := x.req.DestBucket
	in := &s3.PutObjectInput{
		Bucket: &d, Key: &it.Key, Body: bytes.NewReader(data), ContentLength: aws.Int64(it.Size),
		ChecksumCRC32: aws.String(s3x.CRCBase64(it.CRC32)), ContentType: aws.String(it.ContentType), Metadata: x.metadata(it),
	}
	if !it.Replaces {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := x.c.PutObject(context.WithoutCancel(ctx), in); err != nil && !x.alreadyOurs(context.WithoutCancel(ctx), err, it) {
		return fmt.Errorf("entry %q: put s3://%s/%s: %w", it.Name, d, it.Key, x.classify(err, d, it.Key))
	}
	x.wrote(it)
	return nil
}

// uploadLarge streams a decoded entry into a multipart upload of 16 MiB
// parts, each with its CRC-32, completed with the entry's CRC-32.
func (x *executor) uploadLarge(ctx context.Context, it *Item, dec io.Reader) error {
	const partSize = 16 << 20
	d := x.req.DestBucket
	cr, err := x.c.CreateMultipartUpload(context.WithoutCancel(ctx), &s3.CreateMultipartUploadInput{
		Bucket: &d, Key: &it.Key, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, ChecksumType: types.ChecksumTypeFullObject,
		ContentType: aws.String(it.ContentType), Metadata: x.metadata(it),
	})
	if err != nil {
		return fmt.Errorf("entry %q: create upload for s3://%s/%s: %w", it.Name, d, it.Key, err)
	}
	id := aws.ToString(cr.UploadId)
	x.began(it.Key, id)
	buf := make([]byte, partSize)
	var parts []types.CompletedPart
	var total int64
	var whole uint32
	for total < it.Size {
		n, err := io.ReadFull(dec, buf[:min(partSize, it.Size-total)])
		if err != nil {
			return &ChecksumError{fmt.Sprintf("entry %q: decoding at byte %d of %d: %v: the archive is corrupt", it.Name, total, it.Size, err)}
		}
		sum := crc32.ChecksumIEEE(buf[:n])
		whole = zipformat.CombineCRC(whole, sum, int64(n))
		pn := int32(len(parts) + 1)
		out, err := x.c.UploadPart(context.WithoutCancel(ctx), &s3.UploadPartInput{
			Bucket: &d, Key: &it.Key, UploadId: &id, PartNumber: &pn, Body: bytes.NewReader(buf[:n]),
			ContentLength: aws.Int64(int64(n)), ChecksumCRC32: aws.String(s3x.CRCBase64(sum)),
		})
		if err != nil {
			return fmt.Errorf("entry %q: upload part %d of s3://%s/%s: %w", it.Name, pn, d, it.Key, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: &pn, ETag: out.ETag, ChecksumCRC32: aws.String(s3x.CRCBase64(sum))})
		total += int64(n)
	}
	if n, _ := io.Copy(io.Discard, io.LimitReader(dec, 1)); n != 0 {
		return &ChecksumError{fmt.Sprintf("entry %q decodes to more than the %d bytes the central directory says: the archive is corrupt", it.Name, it.Size)}
	}
	if whole != it.CRC32 {
		return &ChecksumError{fmt.Sprintf("entry %q decodes to CRC-32 %08x, the central directory says %08x: the archive is corrupt", it.Name, whole, it.CRC32)}
	}
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &d, Key: &it.Key, UploadId: &id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		ChecksumCRC32: aws.String(s3x.CRCBase64(it.CRC32)), ChecksumType: types.ChecksumTypeFullObject, MpuObjectSize: aws.Int64(it.Size),
	}
	if !it.Replaces {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := x.c.CompleteMultipartUpload(context.WithoutCancel(ctx), in); err != nil {
		if !x.alreadyOurs(context.WithoutCancel(ctx), err, it) {
			return fmt.Errorf("entry %q: complete s3://%s/%s: %w", it.Name, d, it.Key, x.classify(err, d, it.Key))
		}
		_, _ = x.c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &d, Key: &it.Key, UploadId: &id})
	}
	x.ended(id)
	x.wrote(it)
	return nil
}

// report is the report object's content.
type report struct {
	Archive string    `json:"archive"`
	ETag    string    `json:"etag"`
	Objects []Written `json:"objects"`
	Skipped []Skipped `json:"skipped,omitempty"`
}

func (x *executor) writeReport(ctx context.Context, res *Result) (string, error) {
	b, _ := json.MarshalIndent(report{Archive: res.Archive, ETag: res.ETag, Objects: res.Objects, Skipped: res.Skipped}, "", "  ")
	d, key := x.req.DestBucket, x.req.Prefix+ReportName
	in := &s3.PutObjectInput{Bucket: &d, Key: &key, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
		ChecksumCRC32: aws.String(s3x.CRCBase64(crc32.ChecksumIEEE(b))), ContentType: aws.String("application/json"),
		Metadata: map[string]string{ExecutionMetadata: x.ex.Execution}}
	if !x.ex.ReplacesReport {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := x.c.PutObject(context.WithoutCancel(ctx), in); err != nil {
		if _, ours, herr := owner(ctx, x.c, d, key, x.ex.Execution); herr != nil || !ours || !s3ref.IsCode(err, "PreconditionFailed") {
			return "", classifyS3(fmt.Errorf("put report s3://%s/%s: %w", d, key, x.classify(err, d, key)))
		}
	}
	return fmt.Sprintf("s3://%s/%s", d, key), nil
}

// SourceChangedError says the archive changed while it was being extracted.
type SourceChangedError struct {
	Archive, ETag string
	Err           error
}

func (e *SourceChangedError) Error() string {
	return fmt.Sprintf("%s changed during the extraction (it was ETag %s): %v; run again", e.Archive, e.ETag, e.Err)
}
func (e *SourceChangedError) Unwrap() error { return e.Err }

func sourceChanged(err error, a *archive.Archive) error {
	if s3ref.IsCode(err, "PreconditionFailed", "NoSuchKey", "NotFound") {
		return &SourceChangedError{Archive: a.String(), ETag: a.ETag, Err: err}
	}
	return err
}

func (x *executor) classify(err error, bucket, key string) error {
	switch {
	case s3ref.IsCode(err, "PreconditionFailed"):
		return &ExistsError{Bucket: bucket, Keys: []string{key}, Appeared: x.ex.Overwrite}
	case s3ref.IsCode(err, "BadDigest", "InvalidPart"):
		return &ChecksumError{fmt.Sprintf("S3 refused s3://%s/%s: its bytes do not have the central directory's CRC-32 (%v)", bucket, key, err)}
	}
	return err
}
