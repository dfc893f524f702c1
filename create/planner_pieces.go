package create

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// dropPieces deletes the pieces no entry reads, because they were joined or
// their entry was left STORED, as soon as that is known. It is best effort,
// since whatever it misses is under the work prefix, which the finalizer or
// Abort deletes.
func dropPieces(ctx context.Context, c S3, bucket string, keys []string) {
	if len(keys) == 0 {
		return
	}
	ids := make([]types.ObjectIdentifier, len(keys))
	for i := range keys {
		ids[i] = types.ObjectIdentifier{Key: &keys[i]}
	}
	_, _ = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
}

// applyReads turns the read results into the entries the layout is planned
// from. An entry that shrank becomes a DEFLATE entry whose source is its
// intermediate object, its pieces joined by a multipart upload. The others
// stay STORED from their sources.
func (pl *Planner) applyReads(ctx context.Context, cfg Config, entries []plan.Entry, jobs []ReadJob, results []ReadResult) error {
	byEntry, err := matchReads(entries, jobs, results)
	if err != nil {
		return err
	}
	idx := make([]int, 0, len(byEntry))
	for i := range byEntry {
		idx = append(idx, i)
	}
	return forEach(ctx, cfg.HeadConcurrency, len(idx), func(ctx context.Context, k int) error {
		return deflated(ctx, pl.S3, &entries[idx[k]], byEntry[idx[k]])
	})
}

// readPiece is a read job and its result.
type readPiece struct {
	job ReadJob
	res ReadResult
}

// matchReads matches the read results to their jobs, sets the digests and
// CRC-32s read whole in entries, and returns the compressed pieces by entry.
func matchReads(entries []plan.Entry, jobs []ReadJob, results []ReadResult) (map[int][]readPiece, error) {
	if len(jobs) != len(results) {
		return nil, fmt.Errorf("read pass: %d results for %d jobs", len(results), len(jobs))
	}
	// Results are matched to jobs by entry and piece, not by position,
	// because a map's result files need not keep the jobs' order.
	type jobKey struct{ entry, piece int }
	got := make(map[jobKey]ReadResult, len(results))
	for _, r := range results {
		got[jobKey{r.Entry, r.Piece}] = r
	}
	byEntry := map[int][]readPiece{}
	for _, j := range jobs {
		r, ok := got[jobKey{j.Entry, j.Piece}]
		if !ok {
			return nil, fmt.Errorf("read pass: no result for entry %d piece %d (s3://%s/%s)", j.Entry, j.Piece, j.Source.Bucket, j.Source.Key)
		}
		e := &entries[j.Entry]
		if j.SHA256 {
			if len(r.SHA256) != 2*sha256.Size {
				return nil, fmt.Errorf("read pass: the result for s3://%s/%s has no SHA-256", e.Source.Bucket, e.Source.Key)
			}
			e.SHA256 = r.SHA256
		}
		if j.Hash {
			if e.CRC32.Known && e.CRC32.Sum != r.RawCRC32.Sum {
				return nil, failure.Checksum("s3://%s/%s: read CRC-32 %08x, S3 says %08x", e.Source.Bucket, e.Source.Key, r.RawCRC32.Sum, e.CRC32.Sum)
			}
			e.CRC32 = r.RawCRC32 // the entry was read whole, so its CRC is known
			continue
		}
		byEntry[j.Entry] = append(byEntry[j.Entry], readPiece{j, r})
	}
	return byEntry, nil
}

// deflated makes an entry whose pieces shrank a DEFLATE entry of its
// intermediate object, its pieces joined when there are more than one; an
// entry that grew, or whose piece was stored, stays as it is. Either way the
// pieces no entry reads are dropped.
func deflated(ctx context.Context, c S3, e *plan.Entry, pieces []readPiece) error {
	var written []string // pieces with an object
	for _, p := range pieces {
		if !p.res.Stored {
			written = append(written, p.job.Key)
		}
	}
	var raw, comp uint32
	var size int64
	for _, p := range pieces {
		if p.res.Stored {
			// A piece not worth compressing leaves the whole entry stored.
			dropPieces(ctx, c, p.job.Bucket, written)
			return nil
		}
		raw = zipformat.CombineCRC(raw, p.res.RawCRC32.Sum, p.job.Length)
		comp = zipformat.CombineCRC(comp, p.res.CRC32.Sum, p.res.Size)
		size += p.res.Size
	}
	if e.CRC32.Known && e.CRC32.Sum != raw {
		return failure.Checksum("s3://%s/%s: read CRC-32 %08x, S3 says %08x", e.Source.Bucket, e.Source.Key, raw, e.CRC32.Sum)
	}
	if size >= e.Size {
		dropPieces(ctx, c, pieces[0].job.Bucket, written)
		return nil // grew
	}
	src := plan.Source{Bucket: pieces[0].job.Bucket, Key: pieces[0].job.Key}
	if len(pieces) > 1 {
		// The key goes beside the pieces, not above them, because a
		// POSIX-backed server cannot hold both k and k/….
		src.Key = strings.TrimSuffix(src.Key, ".0")
		if err := joinPieces(ctx, c, src, pieces[0].job.Bucket, func(yield func(string, int64) bool) {
			for _, p := range pieces {
				if !yield(p.job.Key, p.res.Size) {
					return
				}
			}
		}); err != nil {
			return err
		}
		dropPieces(ctx, c, src.Bucket, written)
	}
	origin := e.Source
	e.RawSize, e.RawCRC32, e.Origin = e.Size, plan.KnownCRC(raw), &origin
	e.Method, e.Source, e.Size, e.CRC32 = plan.MethodDeflate, src, size, plan.KnownCRC(comp)
	return nil
}

// joinPieces joins pieces into dst by a multipart upload. A piece of at
// least the minimum part size is copied server side. Smaller ones are read
// and sent together, holding at most a part's minimum plus one piece in
// memory.
func joinPieces(ctx context.Context, c S3, dst plan.Source, bucket string, pieces func(func(string, int64) bool)) error {
	plain := func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &dst.Bucket, Key: &dst.Key}, plain)
	if err != nil {
		return s3Error("CreateMultipartUpload", dst.Bucket, dst.Key, false, err)
	}
	id := up.UploadId
	done := false
	defer func() {
		if !done {
			c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &dst.Bucket, Key: &dst.Key, UploadId: id})
		}
	}()
	var parts []types.CompletedPart
	var buf []byte
	send := func() error {
		n := int32(len(parts) + 1)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &dst.Bucket, Key: &dst.Key, UploadId: id, PartNumber: &n, Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf)))}, plain)
		if err != nil {
			return s3Error("UploadPart", dst.Bucket, dst.Key, false, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: &n, ETag: out.ETag})
		buf = buf[:0]
		return nil
	}
	var ferr error
	pieces(func(key string, size int64) bool {
		if len(buf) == 0 && size >= s3part.MinPartSize {
			n := int32(len(parts) + 1)
			out, err := c.UploadPartCopy(ctx, s3part.CopyPart(s3part.Part{Bucket: dst.Bucket, Key: dst.Key, UploadID: aws.ToString(id), Number: n}, s3part.Pinned{Bucket: bucket, Key: key, Size: size}, 0, size))
			if err != nil {
				ferr = s3Error("UploadPartCopy", bucket, key, false, err)
				return false
			}
			parts = append(parts, types.CompletedPart{PartNumber: &n, ETag: out.CopyPartResult.ETag})
			return true
		}
		b, err := getBytes(ctx, c, bucket, key, size)
		if err != nil {
			ferr = err
			return false
		}
		if int64(len(b)) != size {
			ferr = fmt.Errorf("intermediate s3://%s/%s is %d bytes, its read job wrote %d", bucket, key, len(b), size)
			return false
		}
		buf = append(buf, b...)
		if len(buf) >= s3part.MinPartSize {
			ferr = send()
		}
		return ferr == nil
	})
	if ferr != nil {
		return ferr
	}
	if len(buf) > 0 {
		if err := send(); err != nil {
			return err
		}
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &dst.Bucket, Key: &dst.Key, UploadId: id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}, plain); err != nil {
		return s3Error("CompleteMultipartUpload", dst.Bucket, dst.Key, false, err)
	}
	done = true
	return nil
}
