package workflow

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"hash/fnv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/plan"
)

// A chain part is built in the work bucket by rounds of two-part multipart
// uploads, [what is built so far][next pieces], then copied into the
// archive's upload (see plan/chain.go). The worker sends only local headers.

// ChainS3 is what building chains needs of S3.
type ChainS3 interface {
	objectGetter
	partUploader
	partCopier
	uploadCreator
	uploadCompleter
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// chainKey spreads round objects over many key prefixes: S3's request rate
// limits apply per prefix.
func chainKey(job *Job, part, round int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d", part)
	return fmt.Sprintf("%schain/%03x/%d-%d", job.WorkPrefix, h.Sum32()&0xfff, part, round)
}

// built is a round object: lead bytes of pad, then content.
type built struct {
	key           string
	lead, content int64
}

func (w *Worker) chainPart(ctx context.Context, cfg Config, job *Job, item *plan.PartJob) (*PartResult, error) {
	if job.PadKey == "" {
		return nil, fmt.Errorf("chain part but the job has no pad object (planner too old?)")
	}
	entries, err := readEntries(ctx, w.S3, job, item)
	if err != nil {
		return nil, err
	}
	c := w.S3
	x := built{key: job.PadKey, lead: plan.PadSize}
	var uploaded int64
	for r, round := range plan.ChainRounds(entries, item.Start, item.End) {
		next, n, err := chainRound(ctx, c, job, entries, x, chainKey(job, item.Number, r), round)
		if err != nil {
			return nil, fmt.Errorf("chain round %d: %w", r, err)
		}
		x, uploaded = next, uploaded+n
	}
	if x.content != item.Size() {
		return nil, fmt.Errorf("internal error: chain built %d bytes, the part is %d", x.content, item.Size())
	}
	out, err := w.S3.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
		Bucket: &job.Destination.Bucket, Key: &job.Destination.Key, UploadId: &job.UploadID,
		PartNumber:      aws.Int32(int32(item.Number)),
		CopySource:      aws.String(copySource(job.WorkBucket, x.key, "")),
		CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", x.lead, x.lead+x.content-1)),
	})
	if err != nil {
		return nil, s3Error("UploadPartCopy", job.WorkBucket, x.key, false, err)
	}
	got := aws.ToString(out.CopyPartResult.ChecksumCRC32)
	if want, ok := chainCRC(entries, item); ok && got != "" && got != crcBase64(want) {
		return nil, &ChecksumMismatchError{fmt.Sprintf("chain part %d: S3 reports CRC-32 %s, its pieces combine to %s", item.Number, got, crcBase64(want))}
	}
	return &PartResult{Part: item.Number, ETag: aws.ToString(out.CopyPartResult.ETag), ChecksumCRC32: got,
		StreamedBytes: uploaded, CopiedBytes: item.Size() - uploaded}, nil
}

// chainRound appends a round's pieces to x and returns the new object.
func chainRound(ctx context.Context, c ChainS3, job *Job, entries []plan.PlacedEntry, x built, key string, round plan.ChainRound) (built, int64, error) {
	bucket := job.WorkBucket
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return x, 0, s3Error("CreateMultipartUpload", bucket, key, false, err)
	}
	abort := func() {
		cctx := context.WithoutCancel(ctx)
		c.AbortMultipartUpload(cctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId})
	}
	// What is built, or its last MinPartSize bytes (end of pad and content).
	from, to, lead := x.lead, x.lead+x.content, int64(0)
	if x.content < plan.MinPartSize {
		from, lead = to-plan.MinPartSize, plan.MinPartSize-x.content
	}
	pieces := append(append([]plan.ChainPiece{}, round.Middle...), round.Last)
	// Header bytes first: a missing CRC stops the round before anything is in flight.
	bodies := make([][]byte, len(pieces))
	for i, pc := range pieces {
		if !pc.Copy {
			if bodies[i], err = headerBytes(entries, pc); err != nil {
				abort()
				return x, 0, err
			}
		}
	}
	etags := make([]string, len(pieces)+1)
	var uploaded int64
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		out, err := c.UploadPartCopy(gctx, &s3.UploadPartCopyInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(1),
			CopySource: aws.String(copySource(bucket, x.key, "")), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", from, to-1))})
		if err != nil {
			return s3Error("UploadPartCopy", bucket, x.key, false, err)
		}
		etags[0] = aws.ToString(out.CopyPartResult.ETag)
		return nil
	})
	added := int64(0)
	for i, pc := range pieces {
		added += pc.Size
		n := int32(i + 2)
		if !pc.Copy {
			body := bodies[i]
			uploaded += int64(len(body))
			g.Go(func() error {
				out, err := c.UploadPart(gctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: &n,
					Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
				if err != nil {
					return s3Error("UploadPart", bucket, key, false, err)
				}
				etags[n-1] = aws.ToString(out.ETag)
				return nil
			})
			continue
		}
		seg := pc.Segments[0]
		e := &entries[seg.Entry]
		g.Go(func() error {
			in := &s3.UploadPartCopyInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: &n,
				CopySource:      aws.String(copySource(e.Source.Bucket, e.Source.Key, e.Source.VersionID)),
				CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", seg.From, seg.To-1))}
			if e.Source.ETag != "" {
				in.CopySourceIfMatch = &e.Source.ETag
			}
			out, err := c.UploadPartCopy(gctx, in)
			if err != nil {
				return s3Error("UploadPartCopy", e.Source.Bucket, e.Source.Key, true, err)
			}
			etags[n-1] = aws.ToString(out.CopyPartResult.ETag)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		abort()
		return x, 0, err
	}
	parts := make([]types.CompletedPart, len(etags))
	for i, t := range etags {
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: aws.String(t)}
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		abort()
		return x, 0, s3Error("CompleteMultipartUpload", bucket, key, false, err)
	}
	return built{key: key, lead: lead, content: x.content + added}, uploaded, nil
}

// headerBytes are a generated piece's bytes: local headers (or parts of
// them), each with its entry's CRC-32, which the plan made sure is known.
func headerBytes(entries []plan.PlacedEntry, pc plan.ChainPiece) ([]byte, error) {
	var out, hdr []byte
	for _, s := range pc.Segments {
		e := &entries[s.Entry]
		if !e.CRC32.Known {
			return nil, &plan.UnknownCRCError{Entry: e.Name}
		}
		hdr = plan.AppendLocalHeader(hdr[:0], e, e.CRC32.Sum)
		out = append(out, hdr[s.From:s.To]...)
	}
	return out, nil
}

// chainCRC is the CRC-32 a chain part's bytes must have, when every piece
// is a whole header or a whole object's data with a known CRC.
func chainCRC(entries []plan.PlacedEntry, item *plan.PartJob) (uint32, bool) {
	var crc uint32
	var hdr []byte
	for _, s := range plan.Segments(entries, item.End, item.Start, item.End) {
		e := &entries[s.Entry]
		if !e.CRC32.Known {
			return 0, false
		}
		switch s.Kind {
		case plan.SegmentHeader:
			hdr = plan.AppendLocalHeader(hdr[:0], e, e.CRC32.Sum)
			crc = crc32.Update(crc, crc32.IEEETable, hdr[s.From:s.To])
		case plan.SegmentData:
			if s.From != 0 || s.To != e.Size {
				return 0, false
			}
			crc = plan.CombineCRC(crc, e.CRC32.Sum, e.Size)
		}
	}
	return crc, true
}
