package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/s3part"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// errNotPiped says a part cannot be piped; the caller assembles it instead.
var errNotPiped = errors.New("part not piped")

// pipePart builds an upload part in one pass, its bytes going from the GETs
// straight into UploadPart with the part's CRC-32 up front, since over plain
// HTTP the SDK sends no trailing checksum. The data segments' CRC-32s come
// from crc.go without reading where they can. S3 checks the streamed bytes
// against the part's CRC-32, so a wrong CRC fails with BadDigest and the
// caller assembles the part with uploadPart instead. pipePart returns
// errNotPiped when the part needs more probes or read-ahead than partwork
// allows, or a probe fails or gives no CRC-32 of its range.
// docs/DESIGN.md, "Piped parts", says why it is built so.
func (b *partBuilder) pipePart(ctx context.Context, part *plan.Part, entries []plan.PlacedEntry, known *copyCRCs) (*PartResult, error) {
	segs := partwork.Segments(entries, part.End, part.Start, part.End) // worker parts end before the directory
	probes, reads := partwork.SplitCRCProbes(entries, segs, partwork.CRCProbes(entries, segs, func(e *plan.PlacedEntry) bool { return !e.CRC32.Known || known.hasTail(e.Index) }))
	if !partwork.Piped(segs, probes, reads) {
		return nil, errNotPiped
	}
	pp := &pipedPart{part: part, entries: entries, segs: segs,
		segCRC: make([]uint32, len(segs)), probed: make([]bool, len(segs)), ahead: make([][]byte, len(segs))}
	if err := b.learnSegmentCRCs(ctx, pp, probes, reads, known); err != nil {
		return nil, err
	}
	computed := pp.entryCRCs(known)
	body, partCRC, err := pp.body(ctx, b.s3, computed)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	job := b.job
	out, err := b.s3.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &job.Destination.Bucket, Key: &job.Destination.Key, UploadId: &job.UploadID,
		PartNumber: aws.Int32(int32(part.Number)), Body: body, ContentLength: aws.Int64(part.Size()),
		ChecksumCRC32: aws.String(s3part.CRCBase64(partCRC)),
	}, func(o *s3.Options) {
		// The CRC-32 S3 verifies covers the payload, and signing it would be another read.
		o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	})
	if err != nil {
		if rerr := body.sourceErr(); rerr != nil {
			return nil, rerr // the source side failed: say so, not UploadPart
		}
		return nil, s3Error("UploadPart", job.Destination.Bucket, job.Destination.Key, false, err)
	}
	got := aws.ToString(out.ChecksumCRC32)
	if got != "" && got != s3part.CRCBase64(partCRC) {
		return nil, failure.Checksum("S3 reports CRC-32 %s for part %d, the bytes sent have %s", got, part.Number, s3part.CRCBase64(partCRC))
	}
	r := &PartResult{Part: part.Number, ETag: aws.ToString(out.ETag), ChecksumCRC32: s3part.CRCBase64(partCRC), StreamedBytes: part.Size()}
	r.addCRCs(computed)
	return r, nil
}

// pipedPart is an upload part on its way to be piped. It holds the part's
// entries cut into segments and, in segCRC, the CRC-32 of every data
// segment, known, probed or read ahead. ahead holds the bytes of the
// segments read ahead, sent from memory.
type pipedPart struct {
	part    *plan.Part
	entries []plan.PlacedEntry
	segs    []partwork.Segment
	segCRC  []uint32
	probed  []bool
	ahead   [][]byte
}

// learnSegmentCRCs sets the CRC-32 of every data segment of pp. The probes'
// come from S3 by way of unprobed or probeCRC, the reads' from their bytes,
// and the rest from the plan.
func (b *partBuilder) learnSegmentCRCs(ctx context.Context, pp *pipedPart, probes, reads []int, known *copyCRCs) error {
	segs, entries, segCRC, probed, ahead := pp.segs, pp.entries, pp.segCRC, pp.probed, pp.ahead
	err := forEach(ctx, b.cfg.GetConcurrency, len(probes)+len(reads), func(ctx context.Context, k int) error {
		if k >= len(probes) {
			i := reads[k-len(probes)]
			s, e := segs[i], &entries[segs[i].Entry]
			buf := make([]byte, s.To-s.From)
			if err := getRange(ctx, b.s3, sourceOf(e.Source), s.From, buf); err != nil {
				return err
			}
			segCRC[i], probed[i], ahead[i] = crc32.ChecksumIEEE(buf), true, buf
			return nil
		}
		i := probes[k]
		s, e := segs[i], &entries[segs[i].Entry]
		crc, ok, err := b.unprobed(ctx, entries, s, known)
		if ok {
			segCRC[i], probed[i] = crc, true
			return nil
		}
		if err == nil {
			crc, err = probeCRC(ctx, b.probe, e, s.From, s.To)
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, errNotPiped) {
			// A server without copies or a refused copy makes the part
			// assembled instead, whose reads say what is wrong if anything is.
			err = fmt.Errorf("%w: %v", errNotPiped, err)
		}
		if err != nil {
			return err
		}
		segCRC[i], probed[i] = crc, true
		return nil
	})
	if err != nil {
		return err
	}
	for i, s := range segs {
		if s.Kind == partwork.SegmentData && !probed[i] {
			segCRC[i] = entries[s.Entry].CRC32.Sum // CRCProbes left only segments whose CRC-32 the plan knows
		}
	}
	return nil
}

// entryCRCs returns, for their headers, the CRC-32s of the entries whose
// data starts in this part and which the part or a copied tail completes.
func (pp *pipedPart) entryCRCs(known *copyCRCs) map[plan.EntryIndex]uint32 {
	computed := map[plan.EntryIndex]uint32{}
	for i, s := range pp.segs {
		if s.Kind != partwork.SegmentData || s.From != 0 {
			continue
		}
		e := &pp.entries[s.Entry]
		if crc, ok := known.entryCRC(e, s, pp.segCRC[i]); ok {
			computed[e.Index] = crc
		}
	}
	return computed
}

// body returns the part's body, piece by piece, and its CRC-32 combined
// from its pieces'.
func (pp *pipedPart) body(ctx context.Context, c S3, computed map[plan.EntryIndex]uint32) (*concatReader, uint32, error) {
	var pieces []io.ReadSeeker
	var lens []int64
	var partCRC uint32
	for i, s := range pp.segs {
		n := s.To - s.From
		e := &pp.entries[s.Entry]
		switch s.Kind {
		case partwork.SegmentHeader:
			crc, ok := e.CRC32.Sum, e.CRC32.Known
			if v, got := computed[e.Index]; got {
				crc, ok = v, true
			}
			if !ok {
				return nil, 0, &plan.UnknownCRCError{Entry: e.Name}
			}
			hdr := plan.AppendLocalHeader(nil, e, crc)[s.From:s.To]
			partCRC = crc32.Update(partCRC, crc32.IEEETable, hdr)
			pieces = append(pieces, bytes.NewReader(hdr))
		case partwork.SegmentData:
			partCRC = zipformat.CombineCRC(partCRC, pp.segCRC[i], n)
			if pp.ahead[i] != nil {
				pieces = append(pieces, bytes.NewReader(pp.ahead[i]))
				break
			}
			pieces = append(pieces, newRangeReader(ctx, c, sourceOf(e.Source), s.From, s.To))
		default:
			return nil, 0, fmt.Errorf("part %d: holds the central directory, which only the finalizer builds", pp.part.Number)
		}
		lens = append(lens, n)
	}
	return &concatReader{pieces: pieces, lens: lens}, partCRC, nil
}

// concatReader reads pieces of known lengths one after another as one
// io.ReadSeeker, which the SDK rewinds to retry a body.
type concatReader struct {
	pieces []io.ReadSeeker
	lens   []int64
	cur    int   // piece being read
	off    int64 // offset in it
}

// size returns the pieces' total length.
func (r *concatReader) size() int64 {
	var n int64
	for _, l := range r.lens {
		n += l
	}
	return n
}

func (r *concatReader) Read(p []byte) (int, error) {
	for r.cur < len(r.pieces) {
		if r.off >= r.lens[r.cur] {
			r.cur, r.off = r.cur+1, 0
			if r.cur < len(r.pieces) {
				if _, err := r.pieces[r.cur].Seek(0, io.SeekStart); err != nil {
					return 0, err
				}
			}
			continue
		}
		if int64(len(p)) > r.lens[r.cur]-r.off {
			p = p[:r.lens[r.cur]-r.off]
		}
		n, err := r.pieces[r.cur].Read(p)
		r.off += int64(n)
		if errors.Is(err, io.EOF) {
			if r.off < r.lens[r.cur] {
				return n, io.ErrUnexpectedEOF
			}
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.EOF
}

func (r *concatReader) Seek(offset int64, whence int) (int64, error) {
	total := r.size()
	pos := int64(0)
	for i := 0; i < r.cur && i < len(r.lens); i++ {
		pos += r.lens[i]
	}
	pos += r.off
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += pos
	case io.SeekEnd:
		offset += total
	default:
		return 0, fmt.Errorf("seek: whence %d", whence)
	}
	if offset < 0 || offset > total {
		return 0, fmt.Errorf("seek to %d: outside 0-%d", offset, total)
	}
	if offset == pos {
		return pos, nil
	}
	r.cur, r.off = 0, offset
	for r.cur < len(r.lens) && r.off >= r.lens[r.cur] && r.off > 0 {
		r.off -= r.lens[r.cur]
		r.cur++
	}
	if r.cur < len(r.pieces) {
		if _, err := r.pieces[r.cur].Seek(r.off, io.SeekStart); err != nil {
			return 0, err
		}
	}
	return offset, nil
}

// sourceErr returns the first source-side failure of the pieces, if any.
func (r *concatReader) sourceErr() error {
	for _, p := range r.pieces {
		if rr, ok := p.(*rangeReader); ok && rr.err != nil {
			return rr.err
		}
	}
	return nil
}

// Close drops every piece's open response.
func (r *concatReader) Close() error {
	for _, p := range r.pieces {
		if c, ok := p.(io.Closer); ok {
			c.Close()
		}
	}
	return nil
}
