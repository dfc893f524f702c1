package workflow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/klauspost/compress/flate"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// The read pass: before the layout is planned, the entries that need their
// bytes read (to be deflated) are read by a fan-out of read jobs, each one
// piece of one object. A piece is compressed on its own and ends on a flush
// (only an object's last piece is final), so an object's pieces concatenate
// into one valid DEFLATE stream, the way pigz parallelises; the pieces'
// CRC-32s combine into the object's. The compressed bytes go to intermediate
// objects under the work prefix, which then become the entries' sources, and
// the layout is planned with the compressed sizes.

// Compression settings (Options.Compression).
const (
	CompressNone    = "none"
	CompressDeflate = "deflate"
	CompressAuto    = "auto"

	// DefaultLevel is the DEFLATE level when the request gives none.
	DefaultLevel = 6
	// DefaultPieceSize is how much of an object one read job reads.
	DefaultPieceSize = 64 << 20
	// autoSample is how much of a piece's start auto compresses to decide
	// whether the rest is worth it.
	autoSample = 256 << 10
	// autoMaxRatio is the compressed/uncompressed ratio of the sample above
	// which auto stores the entry: below 10% saving, DEFLATE costs readers
	// time for little.
	autoMaxRatio = 0.9
)

// compressedExtensions are formats that are compressed already: auto stores
// them without reading.
var compressedExtensions = map[string]bool{
	".zip": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true, ".rar": true, ".lz4": true, ".br": true,
	".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".heic": true, ".avif": true,
	".mp3": true, ".aac": true, ".ogg": true, ".opus": true, ".flac": true, ".m4a": true,
	".mp4": true, ".m4v": true, ".mov": true, ".mkv": true, ".webm": true, ".avi": true,
	".pdf": true, ".docx": true, ".xlsx": true, ".pptx": true, ".jar": true, ".apk": true, ".parquet": true, ".orc": true,
}

// compressedMagic are the first bytes of compressed formats (checked on the
// sample a read job takes anyway).
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

// DigestSHA256 is the one digest options.digests offers.
const DigestSHA256 = "sha256"

// needsReadPass reports whether the request asks for entries' bytes.
func (o Options) needsReadPass() bool { return o.compresses() || o.sha256() }

func (o Options) compresses() bool {
	return o.Compression == CompressDeflate || o.Compression == CompressAuto
}

func (o Options) sha256() bool {
	for _, d := range o.Digests {
		if d == DigestSHA256 {
			return true
		}
	}
	return false
}

// ReadJob is one piece of one entry to read and compress, or a lookup
// (Lookup: lookup.go). Fields a job has no use for are left out of its
// JSON: a read round of a million lookups is a million of them.
type ReadJob struct {
	Entry  int         `json:"entry"` // index in the read round's entries
	Piece  int         `json:"piece,omitempty"`
	Pieces int         `json:"pieces,omitempty"`
	Source plan.Source `json:"source"`
	Offset int64       `json:"offset,omitempty"`
	Length int64       `json:"length,omitempty"` // a lookup's: the planned size (LookupCRC, LookupStoredCRC)
	Level  int         `json:"level,omitempty"`
	Auto   bool        `json:"auto,omitempty"`
	// SHA256 asks for the piece's SHA-256 (a whole object's: SHA-256 does
	// not combine, so only a one-piece job or a Hash job computes it).
	SHA256 bool `json:"sha256,omitempty"`
	// Hash is a job that reads a whole object for its SHA-256 and CRC-32
	// only: nothing is compressed or written.
	Hash bool `json:"hash,omitempty"`
	// Bucket and Key are the intermediate object the compressed piece goes
	// to; a LookupCRC's, the key its batch's probe upload is named after.
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	// Lookup makes the job a lookup of Source (LookupPin, LookupCRC,
	// LookupStoredCRC): nothing is read into the work prefix.
	Lookup string `json:"lookup,omitempty"`
	// Line is a manifest object's line (LookupPin), for the problems the
	// planner lists.
	Line int `json:"line,omitempty"`
	// KeepMetadata: a LookupPin answers the object's metadata extra field
	// too (options.keepMetadata).
	KeepMetadata bool `json:"keepMetadata,omitempty"`
	// Stored is what S3 stores of Source's CRC-32 when the listing, the
	// inventory or the pin said (LookupCRC: StoredNone, StoredComposite).
	Stored string `json:"stored,omitempty"`
}

// ReadResult is what a read job learned.
type ReadResult struct {
	Entry int `json:"entry"`
	Piece int `json:"piece,omitempty"`
	// RawCRC32 is the CRC-32 of the piece's bytes as read.
	RawCRC32 plan.CRC `json:"rawCrc32,omitzero"`
	// Stored says the piece was not worth compressing (auto) or grew: no
	// intermediate object was written.
	Stored bool `json:"stored,omitempty"`
	// Size and CRC32 are the compressed piece's.
	Size  int64    `json:"size,omitempty"`
	CRC32 plan.CRC `json:"crc32,omitzero"`
	// SHA256 is the bytes' SHA-256 in hex, when the job asked for it.
	SHA256 string `json:"sha256,omitempty"`
	// Object is what a lookup learned.
	Object *Looked `json:"object,omitempty"`
}

// readJobs cuts the entries that need reading into pieces.
func readJobs(entries []plan.Entry, o Options, pieceSize int64, bucket, prefix string) []ReadJob {
	level := o.Level
	if level == 0 {
		level = DefaultLevel
	}
	var jobs []ReadJob
	for i, e := range entries {
		if e.Dir || e.Size == 0 {
			continue
		}
		compress := o.compresses() && !(o.Compression == CompressAuto && compressedExtensions[strings.ToLower(path.Ext(e.Name))])
		pieces := int((e.Size + pieceSize - 1) / pieceSize)
		if compress {
			for p := 0; p < pieces; p++ {
				off := int64(p) * pieceSize
				jobs = append(jobs, ReadJob{Entry: i, Piece: p, Pieces: pieces, Source: e.Source, Offset: off, Length: min(pieceSize, e.Size-off),
					Level: level, Auto: o.Compression == CompressAuto, SHA256: o.sha256() && pieces == 1, Bucket: bucket, Key: fmt.Sprintf("%sdeflate/%d.%d", prefix, i, p)})
			}
		}
		if o.sha256() && (!compress || pieces > 1) {
			jobs = append(jobs, ReadJob{Entry: i, Piece: -1, Pieces: 1, Source: e.Source, Length: e.Size, SHA256: true, Hash: true})
		}
	}
	return jobs
}

// Reader runs read jobs.
type Reader struct {
	S3 readS3
	// Lookups is how many lookups a batch has in flight (0: the default
	// HeadConcurrency, HEAD_CONCURRENCY).
	Lookups int
}

// Read reads one piece, compresses it and writes the compressed bytes to
// the job's intermediate object. Memory: the compressed piece (at most the
// piece and a little) and the compressor's state.
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
		return nil, &TransientError{Op: what, Err: err}
	}
	if job.Auto {
		n += min(job.Length, autoSample)
	}
	if err := finish(n); err != nil {
		return nil, err
	}
	// Only the last piece ends the stream; the others end on a flush, byte
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
		res.Stored = true // grew: the entry stays STORED from its source
		return res, nil
	}
	res.Size, res.CRC32 = int64(comp.Len()), plan.KnownCRC(crc32.ChecksumIEEE(comp.Bytes()))
	if err := r.putPiece(ctx, job, comp.Bytes(), res.CRC32.Sum); err != nil {
		return nil, err
	}
	return res, nil
}

// pieceRead is a piece as it is read: its bytes go through its CRC-32 (and
// its SHA-256, when the job asks for it) on the way.
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
			return &TransientError{Op: job.readOp(), Err: err}
		}
		read += n
		res.SHA256 = hex.EncodeToString(pr.sum.Sum(nil))
	}
	if read != job.Length && (pr.sum != nil || !res.Stored) {
		return &SourceChangedError{Bucket: src.Bucket, Key: src.Key, Err: fmt.Errorf("bytes %d-%d: read %d, planned %d", job.Offset, job.Offset+job.Length-1, read, job.Length)}
	}
	res.RawCRC32 = plan.KnownCRC(pr.raw.Sum32())
	return nil
}

// readBytes is how much of its source the job reads, for progress: a
// lookup's Length is its object's size, which it does not read.
func (job ReadJob) readBytes() int64 {
	if job.Lookup != "" {
		return 0
	}
	return job.Length
}

// readOp names the job's read in errors.
func (job ReadJob) readOp() string {
	return fmt.Sprintf("read s3://%s/%s bytes %d-%d", job.Source.Bucket, job.Source.Key, job.Offset, job.Offset+job.Length-1)
}

// getPiece opens the job's piece of its source, pinned by ETag.
func (r *Reader) getPiece(ctx context.Context, job ReadJob) (io.ReadCloser, error) {
	src := job.Source
	in := &s3.GetObjectInput{Bucket: &src.Bucket, Key: &src.Key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", job.Offset, job.Offset+job.Length-1))}
	in.IfMatch, in.VersionId = pin(src.ETag, src.VersionID)
	out, err := r.S3.GetObject(ctx, in)
	if err != nil {
		return nil, s3Error("GetObject", src.Bucket, src.Key, true, err)
	}
	return out.Body, nil
}

// autoStores is auto's try of the piece's start: a known compressed
// format, or a sample that does not shrink enough, and the piece is stored
// (the rest of it is not read). It returns the choice and the bytes read;
// the sample is in fw, comp its compressed bytes so far.
func autoStores(body io.Reader, fw *flate.Writer, comp *bytes.Buffer, job ReadJob) (stored bool, sampled int64, err error) {
	sample := make([]byte, min(job.Length, autoSample))
	if _, err := io.ReadFull(body, sample); err != nil {
		return false, 0, &TransientError{Op: job.readOp(), Err: err}
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

// putPiece writes a compressed piece to the job's intermediate object. No
// stored checksum: the layout copies ranges of these objects, and the plan
// carries their CRC-32 itself.
// putPiece stores a compressed piece with the CRC-32 of its bytes, the one
// the archive's headers and completion will be built from: S3 checks it
// (BadDigest), so a piece changed on its way fails here, named, not the
// archive at its completion.
func (r *Reader) putPiece(ctx context.Context, job ReadJob, comp []byte, crc uint32) error {
	plain := func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }
	want := s3x.CRCBase64(crc)
	out, err := r.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &job.Bucket, Key: &job.Key, Body: bytes.NewReader(comp), ContentLength: aws.Int64(int64(len(comp))),
		ChecksumCRC32: &want}, plain)
	if err != nil {
		return s3Error("PutObject", job.Bucket, job.Key, false, err)
	}
	if got := aws.ToString(out.ChecksumCRC32); got != "" && got != want {
		return &ChecksumMismatchError{fmt.Sprintf("compressed piece %d of s3://%s/%s: S3 stored CRC-32 %s, its bytes have %s", job.Piece, job.Source.Bucket, job.Source.Key, got, want)}
	}
	return nil
}

// mergeS3 is what joining an entry's pieces needs of S3.
type mergeS3 interface {
	objectGetter
	objectHeader
	uploadCreator
	partUploader
	partCopier
	uploadCompleter
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// dropPieces deletes pieces no entry reads any more (joined, or of an entry
// left STORED) as soon as that is known. It is best effort: whatever it
// misses is under the work prefix, which the finalizer or Abort deletes.
func dropPieces(ctx context.Context, c mergeS3, bucket string, keys []string) {
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
// from: an entry that shrank becomes a DEFLATE entry whose source is its
// intermediate object (its pieces joined by a multipart upload); the others
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
	// Results are matched to jobs by entry and piece, not by position: a
	// map's result files need not keep the jobs' order.
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
				return nil, &ChecksumMismatchError{fmt.Sprintf("s3://%s/%s: read CRC-32 %08x, S3 says %08x", e.Source.Bucket, e.Source.Key, r.RawCRC32.Sum, e.CRC32.Sum)}
			}
			e.CRC32 = r.RawCRC32 // read whole: its CRC is known now
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
func deflated(ctx context.Context, c mergeS3, e *plan.Entry, pieces []readPiece) error {
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
			// A piece not worth compressing: the whole entry is stored.
			dropPieces(ctx, c, p.job.Bucket, written)
			return nil
		}
		raw = zipformat.CombineCRC(raw, p.res.RawCRC32.Sum, p.job.Length)
		comp = zipformat.CombineCRC(comp, p.res.CRC32.Sum, p.res.Size)
		size += p.res.Size
	}
	if e.CRC32.Known && e.CRC32.Sum != raw {
		return &ChecksumMismatchError{fmt.Sprintf("s3://%s/%s: read CRC-32 %08x, S3 says %08x", e.Source.Bucket, e.Source.Key, raw, e.CRC32.Sum)}
	}
	if size >= e.Size {
		dropPieces(ctx, c, pieces[0].job.Bucket, written)
		return nil // grew
	}
	src := plan.Source{Bucket: pieces[0].job.Bucket, Key: pieces[0].job.Key}
	if len(pieces) > 1 {
		// (A key beside the pieces, not above them: a POSIX-backed
		// server cannot hold both k and k/….)
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

// joinPieces joins pieces into dst by a multipart upload: a piece of at
// least the minimum part size is copied server side, smaller ones are read
// and sent together (at most a part's minimum plus one piece in memory).
func joinPieces(ctx context.Context, c mergeS3, dst plan.Source, bucket string, pieces func(func(string, int64) bool)) error {
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
		if len(buf) == 0 && size >= s3x.MinPartSize {
			n := int32(len(parts) + 1)
			out, err := c.UploadPartCopy(ctx, s3x.CopyPart(s3x.Part{Bucket: dst.Bucket, Key: dst.Key, UploadID: aws.ToString(id), Number: n}, s3x.Pinned{Bucket: bucket, Key: key, Size: size}, 0, size))
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
		if len(buf) >= s3x.MinPartSize {
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

// writeJSON writes v as a work object.
func writeJSON(ctx context.Context, c objectPutter, bucket, key string, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))})
	return s3Error("PutObject", bucket, key, false, err)
}

// ReadsDone is a read round as PlanLayout gets it: what it did, where its
// entries and jobs are, and where the ReadEntries Map wrote its results.
type ReadsDone struct {
	// Stage is the round's step of planning: StagePin, StageRead, StageCRC
	// ("" is StageRead).
	Stage      string `json:"stage,omitempty"`
	EntriesKey string `json:"entriesKey,omitempty"`
	JobsKey    string `json:"jobsKey"`
	// Results is the ReadEntries Map's output (its ResultWriter manifest);
	// nil when there was nothing to read.
	Results *MapResults `json:"results,omitempty"`
}

// ReadPlan is what the planner returns instead of a Job when a read round
// must run first: the state the ReadEntries Map runs on. Its "reads" field
// is what routes the execution there (a Job has none).
type ReadPlan struct {
	Execution      string    `json:"execution"`
	WorkBucket     string    `json:"workBucket"`
	WorkPrefix     string    `json:"workPrefix"`
	Jobs           int       `json:"jobs"`           // read jobs: items of Reads.JobsKey
	MaxConcurrency int       `json:"maxConcurrency"` // ReadEntries' MaxConcurrencyPath
	ReadsPerBatch  int       `json:"readsPerBatch"`  // ReadEntries' MaxItemsPerBatchPath
	Reads          ReadsDone `json:"reads"`
}

// ReadsPerBatch is the read plan's batch size: jobs spread over the
// concurrency, at most most per batch (Config.MaxReadsPerBatch for read
// jobs, DefaultLookupsPerBatch for lookups).
func ReadsPerBatch(jobs, concurrency, most int) int {
	if concurrency < 1 {
		concurrency = 1
	}
	return min(most, max(1, (jobs+concurrency-1)/concurrency))
}

// ReadBatchInput is one ReadEntries batch, as the ItemBatcher makes it.
type ReadBatchInput struct {
	Items []ReadJob `json:"Items"`
}

// ReadBatchResult is a reader invocation's output, one result per job.
type ReadBatchResult struct {
	Results []ReadResult `json:"results"`
}

// Handle is the reader Lambda's handler: the batch's read jobs one after
// the other (DEFLATE is CPU-bound, and the reader has one vCPU; memory holds
// one compressed piece at a time), or its lookups, many at once.
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

// readRound is the read pass's round: the read jobs the entries need,
// handed to the ReadEntries Map; with none (e.g. only empty objects), the
// entries as the read pass leaves them.
func (r *planRun) readRound(ctx context.Context, entries []plan.Entry) ([]plan.Entry, *ReadPlan, error) {
	// Refused now, before anything is read or written.
	if err := checksumsFileFree(entries, r.req.Options.ChecksumsFile); err != nil {
		return nil, nil, err
	}
	jobs := readJobs(entries, r.req.Options, r.cfg.PieceSize, r.cfg.WorkBucket, r.prefix)
	if len(jobs) == 0 {
		entries, err := r.readsFinished(ctx, entries)
		return entries, nil, err
	}
	rp, err := r.handOver(ctx, StageRead, entries, jobsOf(jobs))
	return nil, rp, err
}

// readDone reads the read round's entries and results and applies them.
func (r *planRun) readDone(ctx context.Context, d *ReadsDone) ([]plan.Entry, error) {
	entries, jobs, got, err := roundBack[ReadJob](ctx, r, d)
	if err != nil {
		return nil, err
	}
	var results []ReadResult
	if err := got(func(res ReadResult) error { results = append(results, res); return nil }); err != nil {
		return nil, err
	}
	// Before the read results replace compressed entries' sources with
	// their work objects: a clash names the user's object.
	if err := checksumsFileFree(entries, r.req.Options.ChecksumsFile); err != nil {
		return nil, err
	}
	if err := r.pl.applyReads(ctx, r.cfg, entries, jobs, results); err != nil {
		return nil, err
	}
	return r.readsFinished(ctx, entries)
}

// readsFinished completes what the read pass leaves: the digests of the
// entries with nothing to read, the checksums file.
func (r *planRun) readsFinished(ctx context.Context, entries []plan.Entry) ([]plan.Entry, error) {
	if r.req.Options.sha256() {
		for i := range entries {
			if e := &entries[i]; !e.Dir && e.UncompressedSize() == 0 {
				e.SHA256 = emptySHA256 // not read: there is nothing to read
			}
		}
	}
	if name := r.req.Options.ChecksumsFile; name != "" && !r.req.Options.splitLimits().On() {
		// A split run's archives each get their own (listedArchives).
		return r.pl.addChecksumsFile(ctx, entries, name, r.cfg.WorkBucket, r.prefix)
	}
	return entries, nil
}

// emptySHA256 is the SHA-256 of no bytes (entries without data are not read).
var emptySHA256 = hex.EncodeToString(func() []byte { s := sha256.Sum256(nil); return s[:] }())

// checksumsFile is the `sha256sum -c` listing of the entries' digests, in
// archive order (checksumLine).
func checksumsFile(entries []plan.Entry) ([]byte, error) {
	var b bytes.Buffer
	for i := range entries {
		if e := &entries[i]; !e.Dir && e.SHA256 == "" {
			return nil, fmt.Errorf("internal error: entry %q has no SHA-256 after the read pass", e.Name)
		}
		b.WriteString(checksumLine(&entries[i]))
	}
	return b.Bytes(), nil
}

// checksumLine is an entry's line of the checksums file: "<hex>  <name>\n"
// (a name with a newline or carriage return is escaped the way sha256sum
// does, with a leading backslash); none for a folder.
func checksumLine(e *plan.Entry) string {
	if e.Dir {
		return ""
	}
	if strings.ContainsAny(e.Name, "\n\r") {
		return "\\" + e.SHA256 + "  " + strings.NewReplacer("\n", "\\n", "\r", "\\r").Replace(e.Name) + "\n"
	}
	return e.SHA256 + "  " + e.Name + "\n"
}

// checksumsFileFree refuses a checksums file named like an entry ("": none
// asked for).
func checksumsFileFree(entries []plan.Entry, name string) error {
	if name == "" {
		return nil
	}
	for _, e := range entries {
		if e.Name == name {
			return requestError("options.checksumsFile %q is also the name of s3://%s/%s; choose another name", name, e.Source.Bucket, e.Source.Key)
		}
	}
	return nil
}

// addChecksumsFile writes the checksums file to the work prefix and adds it
// as the last entry (checksumsEntry). Its name is free (checksumsFileFree).
func (pl *Planner) addChecksumsFile(ctx context.Context, entries []plan.Entry, name, bucket, prefix string) ([]plan.Entry, error) {
	e, err := pl.checksumsEntry(ctx, entries, name, bucket, prefix+"checksums")
	if err != nil {
		return nil, err
	}
	return append(entries, e), nil
}

// checksumsEntry writes the checksums file of entries to bucket/key and
// is its entry (STORED; its CRC-32 is known from its bytes).
func (pl *Planner) checksumsEntry(ctx context.Context, entries []plan.Entry, name, bucket, key string) (plan.Entry, error) {
	body, err := checksumsFile(entries)
	if err != nil {
		return plan.Entry{}, err
	}
	out, err := pl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))},
		func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired })
	if err != nil {
		return plan.Entry{}, s3Error("PutObject", bucket, key, false, err)
	}
	return plan.Entry{Name: name, Source: plan.Source{Bucket: bucket, Key: key, ETag: aws.ToString(out.ETag)}, Size: int64(len(body)),
		ModTime: time.Now().UTC(), CRC32: plan.KnownCRC(crc32.ChecksumIEEE(body)), SHA256: fmt.Sprintf("%x", sha256.Sum256(body))}, nil
}
