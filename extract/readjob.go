package extract

// A read job reads neighbouring entries with one ranged GET. Each is
// inflated or taken as is, its size and CRC-32 checked, and written.

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/zipread"
)

// largeObject is the size from which an inflated entry is uploaded in parts
// rather than buffered for one PutObject.
const largeObject = 64 << 20

// largePart is the size of a large entry's parts.
const largePart = 16 << 20

// readGroup reads neighbouring entries with one ranged GET and writes each.
// The GET is read in order, and the entries' PUTs overlap within x.puts,
// since a job of thousands of small entries written one at a time waits on
// round trips, not on S3's rate.
func (x *executor) readGroup(ctx context.Context, j *Job) (err error) {
	r := j.Ranges[0]
	var body io.ReadCloser = io.NopCloser(bytes.NewReader(nil))
	if r.End > r.Start {
		if body, err = x.get(ctx, r); err != nil {
			return err
		}
	}
	defer body.Close()
	puts, pctx := errgroup.WithContext(ctx)
	defer func() {
		// What is in flight ends before the job does, whatever it returns.
		// A failed PUT cancels pctx, and its error, not the cancellation the
		// reading then met, is the job's.
		if werr := puts.Wait(); werr != nil && (err == nil || ctx.Err() == nil && errors.Is(err, context.Canceled)) {
			err = werr
		}
	}()
	pos := r.Start
	for k := range j.Items {
		it := &j.Items[k]
		if _, err := io.CopyN(io.Discard, body, it.Offset-pos); err != nil {
			return fmt.Errorf("read %s up to entry %q: %w", x.a, it.Name, err)
		}
		if err := x.skipLocalHeader(body, it); err != nil {
			return err
		}
		src := io.LimitReader(body, it.CompressedSize)
		if err := x.writeEntry(pctx, puts, it, src); err != nil {
			return err
		}
		// Drain whatever the decoder left of the entry's range, which never needs more.
		if _, err := io.Copy(io.Discard, src); err != nil {
			return fmt.Errorf("read %s entry %q: %w", x.a, it.Name, err)
		}
		pos = it.DataStart + it.CompressedSize
	}
	return nil
}

// skipLocalHeader reads the entry's local header from body, sets where its
// data starts, and checks that the data ends by the entry's bound.
func (x *executor) skipLocalHeader(body io.Reader, it *Item) error {
	var fixed [30]byte
	if _, err := io.ReadFull(body, fixed[:]); err != nil {
		return fmt.Errorf("read %s: local header of entry %q at %d: %w", x.a, it.Name, it.Offset, err)
	}
	if binary.LittleEndian.Uint32(fixed[:]) != 0x04034b50 {
		return &zipread.FormatError{Bucket: x.a.Bucket, Key: x.a.Key, Offset: it.Offset, What: fmt.Sprintf("entry %q: no local header (signature 0x04034b50 missing)", it.Name)}
	}
	hlen := int64(30 + int(binary.LittleEndian.Uint16(fixed[26:])) + int(binary.LittleEndian.Uint16(fixed[28:])))
	it.DataStart = it.Offset + hlen
	if it.DataStart+it.CompressedSize > it.Bound {
		return &zipread.FormatError{Bucket: x.a.Bucket, Key: x.a.Key, Offset: it.Offset, What: fmt.Sprintf(
			"entry %q: its %d-byte local header and %d bytes of data end at %d, past the next entry at %d (overlapping entries)", it.Name, hlen, it.CompressedSize, it.DataStart+it.CompressedSize, it.Bound)}
	}
	if _, err := io.CopyN(io.Discard, body, hlen-30); err != nil {
		return fmt.Errorf("read %s: local header of entry %q: %w", x.a, it.Name, err)
	}
	return nil
}

// writeEntry decodes an entry's data from src and checks its size and
// CRC-32. A large entry is uploaded in parts before it returns; a small one
// is put by puts, once x.puts has room for it.
func (x *executor) writeEntry(ctx context.Context, puts *errgroup.Group, it *Item, src io.Reader) error {
	var dec io.Reader = src
	if it.Method == zipread.MethodDeflate {
		fr := flate.NewReader(src)
		defer fr.Close()
		dec = fr
	}
	if it.Size >= largeObject {
		return x.uploadLarge(ctx, it, dec)
	}
	data := make([]byte, it.Size)
	if _, err := io.ReadFull(dec, data); err != nil {
		return failure.Checksum("entry %q: decoding %d bytes: %v: the archive is corrupt", it.Name, it.Size, err)
	}
	if err := decodedAsListed(it, dec, crc32.ChecksumIEEE(data)); err != nil {
		return err
	}
	release, err := x.puts.acquire(ctx, it.Size)
	if err != nil {
		return err // a put of this job failed, or the batch is interrupted
	}
	puts.Go(func() error {
		defer release()
		return x.put(ctx, it, data)
	})
	return nil
}

// put writes a small entry's decoded bytes with one PutObject.
func (x *executor) put(ctx context.Context, it *Item, data []byte) error {
	in := &s3.PutObjectInput{
		Bucket: &x.dest, Key: &it.Key, Body: bytes.NewReader(data), ContentLength: aws.Int64(it.Size),
		ChecksumCRC32: aws.String(s3part.CRCBase64(it.CRC32)), ContentType: aws.String(it.ContentType), Metadata: x.metadata(it),
	}
	in.ContentEncoding, in.CacheControl = it.headers()
	if !it.Replaces {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := x.c.PutObject(context.WithoutCancel(ctx), in); err != nil && !x.alreadyOurs(context.WithoutCancel(ctx), err, it) {
		return fmt.Errorf("entry %q: put s3://%s/%s: %w", it.Name, x.dest, it.Key, x.classify(err, it.Key))
	}
	x.wrote(it)
	return nil
}

// uploadLarge streams a decoded entry into a multipart upload of largePart
// parts, each with its CRC-32, completed with the entry's CRC-32.
func (x *executor) uploadLarge(ctx context.Context, it *Item, dec io.Reader) error {
	id, err := x.create(ctx, it, true)
	if err != nil {
		return err
	}
	buf := make([]byte, largePart)
	var parts []types.CompletedPart
	var total int64
	var whole uint32
	for total < it.Size {
		n, err := io.ReadFull(dec, buf[:min(largePart, it.Size-total)])
		if err != nil {
			return failure.Checksum("entry %q: decoding at byte %d of %d: %v: the archive is corrupt", it.Name, total, it.Size, err)
		}
		sum := crc32.ChecksumIEEE(buf[:n])
		whole = zipformat.CombineCRC(whole, sum, int64(n))
		pn := int32(len(parts) + 1)
		out, err := x.c.UploadPart(context.WithoutCancel(ctx), &s3.UploadPartInput{
			Bucket: &x.dest, Key: &it.Key, UploadId: &id, PartNumber: &pn, Body: bytes.NewReader(buf[:n]),
			ContentLength: aws.Int64(int64(n)), ChecksumCRC32: aws.String(s3part.CRCBase64(sum)),
		})
		if err != nil {
			return fmt.Errorf("entry %q: upload part %d of s3://%s/%s: %w", it.Name, pn, x.dest, it.Key, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: &pn, ETag: out.ETag, ChecksumCRC32: aws.String(s3part.CRCBase64(sum))})
		total += int64(n)
	}
	if err := decodedAsListed(it, dec, whole); err != nil {
		return err
	}
	return x.complete(ctx, it, id, parts, true)
}

// decodedAsListed checks a decoded entry against the central directory.
// Nothing may decode past its size, and crc, its decoded bytes' CRC-32,
// must be the one listed.
func decodedAsListed(it *Item, dec io.Reader, crc uint32) error {
	if n, _ := io.Copy(io.Discard, io.LimitReader(dec, 1)); n != 0 {
		return failure.Checksum("entry %q decodes to more than the %d bytes the central directory says: the archive is corrupt", it.Name, it.Size)
	}
	if crc != it.CRC32 {
		return failure.Checksum("entry %q decodes to CRC-32 %08x, the central directory says %08x: the archive is corrupt", it.Name, crc, it.CRC32)
	}
	return nil
}
