package create

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/stepfn"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/flate"

	"github.com/s3zip/s3zip/plan"
)

// In the read pass, before the layout is planned, a fan-out of read jobs
// reads the entries that need their bytes read to be deflated, each job one
// piece of one object. A piece is compressed on its own and ends on a flush,
// only an object's last piece being final, so an object's pieces concatenate
// into one valid DEFLATE stream, the way pigz parallelises, and the pieces'
// CRC-32s combine into the object's. The compressed bytes go to intermediate
// objects under the work prefix, which then become the entries' sources, and
// the layout is planned with the compressed sizes.

// compressedMagic are the first bytes of compressed formats, checked on the
// sample a read job takes anyway.
var compressedMagic = [][]byte{
	{0x1f, 0x8b},             // gzip
	{'P', 'K', 3, 4},         // zip and its kin
	{0x28, 0xb5, 0x2f, 0xfd}, // zstd
	{'B', 'Z', 'h'},          // bzip2
	{0xfd, '7', 'z', 'X', 'Z', 0},
	{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c},
	{0xff, 0xd8, 0xff},       // JPEG
	{0x89, 'P', 'N', 'G'},    // PNG
	{'G', 'I', 'F', '8'},     // GIF
	{'P', 'A', 'R', '1'},     // Parquet
	{0x04, 0x22, 0x4d, 0x18}, // LZ4
}

func compressedMagicBytes(b []byte) bool {
	for _, m := range compressedMagic {
		if bytes.HasPrefix(b, m) {
			return true
		}
	}
	return false
}

// Reader runs read jobs.
type Reader struct {
	S3 S3
	// Lookups is how many lookups a batch has in flight. 0 means the default
	// HeadConcurrency, set by HEAD_CONCURRENCY.
	Lookups int
}

// Read reads one piece, compresses it and writes the compressed bytes to
// the job's intermediate object. It holds the compressed piece, at most the
// piece and a little, and the compressor's state.
func (r *Reader) Read(ctx context.Context, job ReadJob) (*ReadResult, error) {
	piece, err := r.getPiece(ctx, job)
	if err != nil {
		return nil, err
	}
	defer piece.Close()
	res := &ReadResult{Entry: job.Entry, Piece: job.Piece}
	pr := newPieceRead(piece, job, res)
	body, finish, what := pr.body, pr.finish, job.readOp()
	if job.Hash {
		res.Stored = true
		return res, finish(0)
	}
	var comp bytes.Buffer
	comp.Grow(int(min(job.Length/2, 8<<20)))
	fw, err := flate.NewWriter(&comp, job.Level)
	if err != nil {
		return nil, requestError("options.level %d: %v", job.Level, err)
	}
	if job.Auto {
		stored, sampled, err := autoStores(body, fw, &comp, job)
		if err != nil {
			return nil, err
		}
		if stored {
			res.Stored = true
			return res, finish(sampled)
		}
	}
	n, err := io.Copy(fw, body)
	if err != nil {
		return nil, &stepfn.TransientError{Op: what, Err: err}
	}
	if job.Auto {
		n += min(job.Length, autoSample)
	}
	if err := finish(n); err != nil {
		return nil, err
	}
	// Only the last piece ends the stream. The others end on a flush, byte
	// aligned, so the next piece's blocks follow them.
	if job.Piece == job.Pieces-1 {
		err = fw.Close()
	} else {
		err = fw.Flush()
	}
	if err != nil {
		return nil, err
	}
	if job.Pieces == 1 && int64(comp.Len()) >= job.Length {
		res.Stored = true // it grew, so the entry stays STORED from its source
		return res, nil
	}
	res.Size, res.CRC32 = int64(comp.Len()), plan.KnownCRC(crc32.ChecksumIEEE(comp.Bytes()))
	if err := r.putPiece(ctx, job, comp.Bytes(), res.CRC32.Sum); err != nil {
		return nil, err
	}
	return res, nil
}

// pieceRead is a piece as it is read. Its bytes go through its CRC-32 on the
// way, and through its SHA-256 when the job asks for it.
type pieceRead struct {
	job  ReadJob
	res  *ReadResult
	body io.Reader
	raw  hash.Hash32
	sum  hash.Hash // nil without digests
}

func newPieceRead(piece io.Reader, job ReadJob, res *ReadResult) *pieceRead {
	pr := &pieceRead{job: job, res: res, raw: crc32.NewIEEE()}
	var sink io.Writer = pr.raw
	if job.SHA256 {
		pr.sum = sha256.New()
		sink = io.MultiWriter(pr.raw, pr.sum)
	}
	pr.body = io.TeeReader(io.LimitReader(piece, job.Length), sink)
	return pr
}

// finish reads what is left for the digest and checks the length, given
// the bytes read so far.
func (pr *pieceRead) finish(read int64) error {
	job, res, src := pr.job, pr.res, pr.job.Source
	if pr.sum != nil {
		n, err := io.Copy(io.Discard, pr.body)
		if err != nil {
			return &stepfn.TransientError{Op: job.readOp(), Err: err}
		}
		read += n
		res.SHA256 = hex.EncodeToString(pr.sum.Sum(nil))
	}
	if read != job.Length && (pr.sum != nil || !res.Stored) {
		return &failure.SourceChangedError{Bucket: src.Bucket, Key: src.Key, Err: fmt.Errorf("bytes %d-%d: read %d, planned %d", job.Offset, job.Offset+job.Length-1, read, job.Length)}
	}
	res.RawCRC32 = plan.KnownCRC(pr.raw.Sum32())
	return nil
}

// readOp names the job's read in errors.
func (job ReadJob) readOp() string {
	return fmt.Sprintf("read s3://%s/%s bytes %d-%d", job.Source.Bucket, job.Source.Key, job.Offset, job.Offset+job.Length-1)
}

// getPiece opens the job's piece of its source, pinned by ETag. A body that
// stalls or is cut resumes from the byte it reached.
func (r *Reader) getPiece(ctx context.Context, job ReadJob) (io.ReadCloser, error) {
	src := job.Source
	in := &s3.GetObjectInput{Bucket: &src.Bucket, Key: &src.Key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", job.Offset, job.Offset+job.Length-1))}
	in.IfMatch, in.VersionId = pin(src.ETag, src.VersionID)
	out, err := r.S3.GetObject(ctx, in)
	if err != nil {
		return nil, s3Error("GetObject", src.Bucket, src.Key, true, err)
	}
	return resumed(ctx, r.S3, in, out, true), nil
}

// autoStores tries the piece's start for auto. A known compressed format,
// or a sample that does not shrink enough, stores the piece, and the rest of
// it is not read. It returns the choice and the bytes read. The sample is in
// fw, and comp holds its compressed bytes so far.
func autoStores(body io.Reader, fw *flate.Writer, comp *bytes.Buffer, job ReadJob) (stored bool, sampled int64, err error) {
	sample := make([]byte, min(job.Length, autoSample))
	if _, err := io.ReadFull(body, sample); err != nil {
		return false, 0, &stepfn.TransientError{Op: job.readOp(), Err: err}
	}
	if job.Piece == 0 && compressedMagicBytes(sample) {
		return true, int64(len(sample)), nil
	}
	if _, err := fw.Write(sample); err != nil {
		return false, 0, err
	}
	if err := fw.Flush(); err != nil {
		return false, 0, err
	}
	return float64(comp.Len()) > autoMaxRatio*float64(len(sample)), int64(len(sample)), nil
}

// putPiece writes a compressed piece to the job's intermediate object with
// the CRC-32 of its bytes, the one the archive's headers and completion
// will be built from. S3 checks it and answers BadDigest, so a piece changed
// on its way fails here, named, not the archive at its completion.
func (r *Reader) putPiece(ctx context.Context, job ReadJob, comp []byte, crc uint32) error {
	plain := func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }
	want := s3part.CRCBase64(crc)
	out, err := r.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &job.Bucket, Key: &job.Key, Body: bytes.NewReader(comp), ContentLength: aws.Int64(int64(len(comp))),
		ChecksumCRC32: &want}, plain)
	if err != nil {
		return s3Error("PutObject", job.Bucket, job.Key, false, err)
	}
	if got := aws.ToString(out.ChecksumCRC32); got != "" && got != want {
		return failure.Checksum("compressed piece %d of s3://%s/%s: S3 stored CRC-32 %s, its bytes have %s", job.Piece, job.Source.Bucket, job.Source.Key, got, want)
	}
	return nil
}

// ReadBatchInput is one ReadEntries batch, as the ItemBatcher makes it.
type ReadBatchInput struct {
	Items []ReadJob `json:"Items"`
}

// ReadBatchResult is a reader invocation's output, one result per job.
type ReadBatchResult struct {
	Results []ReadResult `json:"results"`
}

// Handle is the reader Lambda's handler. It runs the batch's read jobs one
// after the other, since DEFLATE is CPU-bound, the reader has one vCPU and
// memory holds one compressed piece at a time, or the batch's lookups, many
// at once.
func (r *Reader) Handle(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
	if len(in.Items) > 0 && in.Items[0].Lookup != "" {
		// A round's jobs are all lookups or all reads.
		return r.lookUpBatch(ctx, in.Items)
	}
	out := &ReadBatchResult{Results: make([]ReadResult, 0, len(in.Items))}
	for _, j := range in.Items {
		res, err := r.Read(ctx, j)
		if err != nil {
			return nil, fmt.Errorf("read job entry %d piece %d (s3://%s/%s bytes %d-%d): %w", j.Entry, j.Piece, j.Source.Bucket, j.Source.Key, j.Offset, j.Offset+j.Length-1, err)
		}
		out.Results = append(out.Results, *res)
	}
	return out, nil
}
