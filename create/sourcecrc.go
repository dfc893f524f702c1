package create

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/stepfn"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// storedCRC asks S3 for the CRC-32 it stores for the whole object (ok=false
// when it stores none, another algorithm, or a composite of parts).
func storedCRC(ctx context.Context, c S3, src plan.Source, size int64) (uint32, bool, error) {
	crc, ok, _, err := headCRC(ctx, c, src, size)
	return crc, ok, err
}

// headCRC is storedCRC that also says whether S3 stores a CRC-32 of the
// object's parts (a composite), which some servers answer a copy with.
func headCRC(ctx context.Context, c S3, src plan.Source, size int64) (crc uint32, ok, composite bool, err error) {
	in := &s3.HeadObjectInput{Bucket: &src.Bucket, Key: &src.Key, ChecksumMode: types.ChecksumModeEnabled}
	in.IfMatch, in.VersionId = pin(src.ETag, src.VersionID)
	h, err := c.HeadObject(ctx, in)
	if err != nil {
		return 0, false, false, s3Error("HeadObject", src.Bucket, src.Key, true, err)
	}
	if aws.ToInt64(h.ContentLength) != size {
		return 0, false, false, &failure.SourceChangedError{Bucket: src.Bucket, Key: src.Key, Err: fmt.Errorf("now %d bytes, planned %d", aws.ToInt64(h.ContentLength), size)}
	}
	crc, ok = fullObjectCRC(h)
	return crc, ok, !ok && aws.ToString(h.ChecksumCRC32) != "", nil
}

// objectCRC returns a source object's CRC-32: the one S3 stores for the
// whole object, else one S3 computes (probe, when given), else read.
func objectCRC(ctx context.Context, c S3, probe *crcProbe, e *plan.PlacedEntry) (uint32, error) {
	return sourceCRC(ctx, c, probe, crcAsked{src: e.Source, size: e.Size})
}

// crcAsked is a source whose CRC-32 is asked for: pinned, its planned size,
// and what S3 stores of its CRC-32 when that is known (StoredNone,
// StoredComposite; "" asks HeadObject first).
type crcAsked struct {
	src    plan.Source
	size   int64
	stored string
}

// sourceCRC is objectCRC of the source a asks about.
func sourceCRC(ctx context.Context, c S3, probe *crcProbe, a crcAsked) (uint32, error) {
	src, size := a.src, a.size
	composite := a.stored == StoredComposite
	if a.stored == "" {
		crc, ok, comp, err := headCRC(ctx, c, src, size)
		if err != nil || ok {
			return crc, err
		}
		composite = comp
	}
	if probe != nil {
		// A server may answer a copy of an object stored with a composite
		// CRC-32 with that composite (versitygw does; S3 answers the copied
		// bytes' CRC): a one-byte copy tells, before S3 copies it all.
		first := int64(0)
		if composite {
			first = 1
		}
		crc, ok, err := probe.crc(ctx, src, size, first)
		if err != nil || ok {
			return crc, err
		}
	}
	// No whole-object CRC stored (none, another algorithm, or a composite of
	// parts) and none computed by S3: read the object.
	return readWholeCRC(ctx, c, src, size)
}

// readWholeCRC reads a source whole, pinned, for its CRC-32.
func readWholeCRC(ctx context.Context, c S3, src plan.Source, size int64) (uint32, error) {
	gin := &s3.GetObjectInput{Bucket: &src.Bucket, Key: &src.Key}
	gin.IfMatch, gin.VersionId = pin(src.ETag, src.VersionID)
	out, err := c.GetObject(ctx, gin)
	if err != nil {
		return 0, s3Error("GetObject", src.Bucket, src.Key, true, err)
	}
	body := resumed(ctx, c, gin, out, true)
	defer body.Close()
	h32 := crc32.NewIEEE()
	n, err := io.Copy(h32, body)
	if err != nil {
		return 0, &stepfn.TransientError{Op: fmt.Sprintf("read s3://%s/%s", src.Bucket, src.Key), Err: err}
	}
	if n != size {
		return 0, &failure.SourceChangedError{Bucket: src.Bucket, Key: src.Key, Err: fmt.Errorf("read %d bytes, planned %d", n, size)}
	}
	return h32.Sum32(), nil
}

// crcProbe has S3 compute objects' CRC-32s without downloading them: a copy
// of an object into a multipart upload created with CRC-32 answers with the
// copied bytes' CRC. The upload is never completed (so parts of any size
// will do) and is aborted when planning, or the worker's batch, ends.
type crcProbe struct {
	c           S3
	bucket, key string
	once        sync.Once
	uploadID    string
	err         error
	next        atomic.Int32
}

func (p *crcProbe) start(ctx context.Context) error {
	p.once.Do(func() {
		out, err := p.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &p.bucket, Key: &p.key,
			ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, ChecksumType: types.ChecksumTypeFullObject})
		if err != nil {
			p.err = s3Error("CreateMultipartUpload", p.bucket, p.key, false, err)
			return
		}
		p.uploadID = aws.ToString(out.UploadId)
	})
	return p.err
}

// crc returns the CRC-32 of the source's bytes, or ok=false when S3 did not
// report a usable one (then the caller reads the object). The first range
// copied is first bytes long when first > 0, else up to 5 GiB like the rest;
// a source S3 copies no range of (partwork.CopyRange) is then not copied at all:
// its whole copy could only be answered as uselessly.
func (p *crcProbe) crc(ctx context.Context, src plan.Source, size, first int64) (uint32, bool, error) {
	if _, ok := partwork.CopyRange(0, min(first, size), size); first > 0 && !ok {
		return 0, false, nil
	}
	var crc uint32
	for from, to := int64(0), int64(0); from < size; from = to {
		to = min(from+s3part.MaxPartSize, size)
		if from == 0 && first > 0 {
			to = min(first, size)
		}
		v, ok, err := p.rangeCRC(ctx, src, size, from, to)
		if err != nil || !ok {
			return 0, false, err
		}
		crc = zipformat.CombineCRC(crc, v, to-from)
	}
	return crc, true, nil
}

// rangeCRC returns the CRC-32 S3 computes of the bytes [from, to) of a
// source of size bytes, copied into the probe's upload; ok=false when its
// answer carries none, or when S3 copies no such range (partwork.CopyRange).
func (p *crcProbe) rangeCRC(ctx context.Context, src plan.Source, size, from, to int64) (uint32, bool, error) {
	if _, copyable := partwork.CopyRange(from, to, size); !copyable {
		return 0, false, nil
	}
	if err := p.start(ctx); err != nil {
		return 0, false, err
	}
	n := p.next.Add(1)%s3part.MaxParts + 1
	in := s3part.CopyPart(s3part.Part{Bucket: p.bucket, Key: p.key, UploadID: p.uploadID, Number: n}, pinned(src, size), from, to)
	out, err := p.c.UploadPartCopy(ctx, in)
	if err != nil {
		return 0, false, s3Error("UploadPartCopy", src.Bucket, src.Key, true, err)
	}
	_, answer, err := copied(out, src.Bucket, src.Key)
	if err != nil {
		return 0, false, err
	}
	v, ok := s3part.DecodeCRC(answer)
	return v, ok, nil
}

func (p *crcProbe) close(ctx context.Context) {
	if p.uploadID != "" {
		p.c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &p.bucket, Key: &p.key, UploadId: &p.uploadID})
	}
}
