package create

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// A chain part is built in the work bucket by rounds of two-part multipart
// uploads, what is built so far followed by the next pieces, then copied
// into the archive's upload; plan/chain.go lays the rounds out. The worker
// sends only local headers.

// chainKey returns the key of a round object, spread over many key prefixes
// because S3's request rate limits apply per prefix. attempt tells apart two
// builds of the same part, as when a batch is retried while its first run
// still works, so that each deletes only its own round objects.
func chainKey(job *Job, part int, attempt string, round int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d", part)
	return fmt.Sprintf("%schain/%03x/%d-%s-%d", job.WorkPrefix, h.Sum32()&0xfff, part, attempt, round)
}

// built is a round object, lead bytes of pad followed by content. stored is
// the CRC-32 S3 stores of the whole object, lead included, when its round was
// completed with one, else "".
type built struct {
	key           string
	lead, content int64
	stored        string
}

// chainBuild is one chain part being built. It holds the part's entries, its
// rounds, their uploads while they are open, and the attempt that names its
// round objects.
type chainBuild struct {
	*partBuilder
	item    *plan.PartJob
	entries []plan.PlacedEntry
	rounds  []partwork.ChainRound
	ups     []*roundUpload
	attempt string
}

// chainPart builds a chain part round by round from the job's pad object and
// copies the last round object into the archive's upload.
func (b *partBuilder) chainPart(ctx context.Context, item *plan.PartJob, known *copyCRCs) (*PartResult, error) {
	job := b.job
	if job.PadKey == "" {
		return nil, fmt.Errorf("chain part %d: the job names no pad object to start its chain from", item.Number)
	}
	entries, err := readEntries(ctx, b.s3, job, item)
	if err != nil {
		return nil, err
	}
	known.apply(entries)
	if err := b.learnNeededCRCs(ctx, item, entries, known); err != nil {
		return nil, err
	}
	rounds := partwork.ChainRounds(entries, item.Start, item.End)
	ch := &chainBuild{partBuilder: b, item: item, entries: entries, rounds: rounds, ups: make([]*roundUpload, len(rounds)), attempt: newAttempt()}
	ups := ch.ups
	bin := newRoundBin(ctx, b.s3, job.WorkBucket, b.log.With("execution", job.Execution, "part", item.Number))
	x := built{key: job.PadKey, lead: partwork.PadSize}
	// Whatever fails, no round's upload is left behind, nor the last round
	// object, so the work bucket holds a few round objects per chain at most.
	defer func() {
		for _, u := range ups {
			if u != nil {
				u.abort(ctx)
			}
		}
		if x.key != job.PadKey {
			bin.drop(x.key)
		}
		bin.close()
	}()
	if err := ch.startChecksummedRounds(ctx, known); err != nil {
		return nil, err
	}
	var uploaded int64
	for r := range rounds {
		if ups[r] == nil {
			if ups[r], err = ch.openRound(ctx, r, false); err != nil {
				return nil, fmt.Errorf("chain round %d: %w", r, err)
			}
		}
		// The next round's upload and its pieces need nothing this round
		// builds, so they are sent while it is built. Every round after the
		// first then waits only for its copy of what is built and its
		// completion, the steps partwork.ChainSteps counts.
		ahead, aheadCtx := errgroup.WithContext(ctx)
		if r+1 < len(rounds) {
			ahead.Go(func() error { return ch.prepare(aheadCtx, r+1) })
		}
		next, n, err := ups[r].finish(ctx, entries, x)
		if err != nil {
			ahead.Go(func() error { return err }) // stops the next round's preparation
			ahead.Wait()
			return nil, fmt.Errorf("chain round %d: %w", r, err)
		}
		if err := ahead.Wait(); err != nil {
			return nil, fmt.Errorf("chain round %d: %w", r+1, err)
		}
		ups[r] = nil
		// This round has copied what was built, so the object before it can
		// go. The pad is every chain's start and stays.
		if x.key != job.PadKey {
			bin.drop(x.key)
		}
		x, uploaded = next, uploaded+n
	}
	r, err := ch.copyProduct(ctx, x)
	if err != nil {
		return nil, err
	}
	r.StreamedBytes, r.CopiedBytes = uploaded, item.Size()-uploaded
	r.addCRCs(known.whole)
	return r, nil
}

// copyProduct copies the chain's last round object, the part's bytes after
// its lead of pad, into the archive's upload.
func (ch *chainBuild) copyProduct(ctx context.Context, x built) (*PartResult, error) {
	job, item := ch.job, ch.item
	if x.content != item.Size() {
		return nil, fmt.Errorf("internal error: chain built %d bytes, the part is %d", x.content, item.Size())
	}
	product := s3part.CopyPart(destPart(job, item.Number), s3part.Pinned{Bucket: job.WorkBucket, Key: x.key, Size: x.lead + x.content}, x.lead, x.lead+x.content)
	out, err := ch.s3.UploadPartCopy(ctx, product)
	if err != nil {
		return nil, s3Error("UploadPartCopy", job.WorkBucket, x.key, false, err)
	}
	etag, got, err := copied(out, job.WorkBucket, x.key)
	if err != nil {
		return nil, err
	}
	r := &PartResult{Part: item.Number, ETag: etag, ChecksumCRC32: got}
	if x.lead > 0 && x.stored != "" && got == x.stored {
		// The answer is the round object's own CRC-32, lead of pad included,
		// not the copied range's. versitygw 1.8 answers so for a ranged copy
		// of an object stored with a CRC-32, where S3 answers the range's.
		// The part is uploaded again, streamed.
		ch.log.Warn("server reported the round object's CRC-32 for the chain part's copy; streaming it instead",
			"execution", job.Execution, "part", item.Number, "bytes", x.content)
		if r, err = ch.streamCopyRange(ctx, &plan.PartJob{Part: item.Part, Source: &plan.Source{Bucket: job.WorkBucket, Key: x.key},
			SourceRange: [2]int64{x.lead, x.lead + x.content}, SourceSize: x.lead + x.content}); err != nil {
			return nil, fmt.Errorf("chain part %d streamed from its last round object: %w", item.Number, err)
		}
	}
	if want, ok := chainCRC(ch.entries, item); ok && r.ChecksumCRC32 != "" && r.ChecksumCRC32 != s3part.CRCBase64(want) {
		return nil, failure.Checksum("chain part %d: S3 reports CRC-32 %s, its pieces combine to %s", item.Number, r.ChecksumCRC32, s3part.CRCBase64(want))
	}
	return r, nil
}

// startChecksummedRounds opens the rounds partwork.ChainChecksums gives a
// checksum and copies their pieces before any header is written, since S3's
// answers to the whole-object copies are the CRC-32s those headers need. It
// sets them in entries and in known's whole CRC-32s. A round whose answer
// is not a usable CRC-32 is given up and built later, plain, and the
// object's CRC is asked for or read instead.
func (ch *chainBuild) startChecksummedRounds(ctx context.Context, known *copyCRCs) error {
	job, item, entries, ups := ch.job, ch.item, ch.entries, ch.ups
	sums, _ := partwork.ChainChecksums(entries, ch.rounds)
	var which []int
	for r, ok := range sums {
		if ok {
			which = append(which, r)
		}
	}
	var mu sync.Mutex
	err := forEach(ctx, ch.cfg.GetConcurrency, len(which), func(ctx context.Context, k int) error {
		r := which[k]
		u, err := ch.openRound(ctx, r, true)
		if err != nil {
			return fmt.Errorf("chain round %d: %w", r, err)
		}
		mu.Lock()
		ups[r] = u
		mu.Unlock()
		if err := u.copyPieces(ctx, entries); err != nil {
			return fmt.Errorf("chain round %d: %w", r, err)
		}
		usable := true
		for i, pc := range u.pieces {
			k, whole := partwork.WholeCopy(entries, pc)
			if !whole {
				continue
			}
			e := &entries[k]
			crc, ok := s3part.DecodeCRC(u.sums[i+1])
			if !ok {
				usable = false
				if crc, err = objectCRC(ctx, ch.s3, nil, e); err != nil {
					return fmt.Errorf("chain round %d: %w", r, err)
				}
			}
			if e.CRC32.Known && e.CRC32.Sum != crc {
				return failure.Checksum("s3://%s/%s: S3 reports CRC-32 %08x for a copy of the whole object, the plan has %08x", e.Source.Bucket, e.Source.Key, crc, e.CRC32.Sum)
			}
			mu.Lock()
			known.whole[e.Index] = crc
			mu.Unlock()
		}
		if !usable {
			// A part checksum that is not a CRC-32 would fail the round's
			// completion, so this round is built plain, later.
			ch.log.Warn("S3 answered a whole-object copy without a usable CRC-32; asked for it instead",
				"execution", job.Execution, "part", item.Number, "round", r)
			u.abort(ctx)
			mu.Lock()
			ups[r] = nil
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	known.apply(entries)
	return nil
}

// prepare opens round r's upload unless it is open, and sends its pieces,
// the copies of sources and the header bytes.
func (ch *chainBuild) prepare(ctx context.Context, r int) error {
	u := ch.ups[r]
	if u == nil {
		var err error
		if u, err = ch.openRound(ctx, r, false); err != nil {
			return err
		}
		ch.ups[r] = u
	}
	g, gctx := errgroup.WithContext(ctx)
	if !u.copied {
		g.Go(func() error { return u.copyPieces(gctx, ch.entries) })
	}
	g.Go(func() error { return u.sendPieces(gctx, ch.entries) })
	return g.Wait()
}

// roundUpload is a chain round's upload of two or more parts in the work
// bucket, what is built so far followed by the round's pieces.
type roundUpload struct {
	c                      S3
	bucket, key, id        string
	checksum               bool // created with CRC-32, so completion lists every part's CRC-32
	pieces                 []partwork.ChainPiece
	etags, sums            []string // by part number - 1
	copied, sent, finished bool
	uploaded               int64 // bytes sendPieces sent
}

// openRound creates round r's upload in the work bucket. With checksum the
// upload is created with CRC-32, and its completion lists every part's.
func (ch *chainBuild) openRound(ctx context.Context, r int, checksum bool) (*roundUpload, error) {
	c, bucket, key, round := ch.s3, ch.job.WorkBucket, chainKey(ch.job, ch.item.Number, ch.attempt, r), ch.rounds[r]
	in := &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key}
	if checksum {
		in.ChecksumAlgorithm, in.ChecksumType = types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject
	}
	// The create is not cancelled with ctx. A round opened ahead is stopped
	// when the round before it fails, and a create the server made whose
	// answer the cancelled request dropped would leave an upload no one
	// aborts. A create that never answers fails the chain within
	// roundCreateTimeout or ctx's deadline, not at the Lambda's timeout; an
	// upload made that late is the abort's to find under the work prefix.
	cctx, cancel := boundedWithoutCancel(ctx, roundCreateTimeout)
	defer cancel()
	up, err := c.CreateMultipartUpload(cctx, in)
	if err != nil {
		return nil, s3Error("CreateMultipartUpload", bucket, key, false, err)
	}
	pieces := append(append([]partwork.ChainPiece{}, round.Middle...), round.Last)
	return &roundUpload{c: c, bucket: bucket, key: key, id: aws.ToString(up.UploadId), checksum: checksum, pieces: pieces,
		etags: make([]string, len(pieces)+1), sums: make([]string, len(pieces)+1)}, nil
}

// roundCreateTimeout bounds a chain round's CreateMultipartUpload, which
// openRound does not let its chain's cancellation stop.
var roundCreateTimeout = 30 * time.Second

// boundedWithoutCancel returns ctx without its cancellation, ending at ctx's
// deadline or after d, whichever is first.
func boundedWithoutCancel(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(d)
	if dl, ok := ctx.Deadline(); ok && dl.Before(end) {
		end = dl
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// abort aborts the round's upload unless it is finished, even when ctx is
// cancelled.
func (u *roundUpload) abort(ctx context.Context) {
	if u.finished {
		return
	}
	u.finished = true
	u.c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &u.bucket, Key: &u.key, UploadId: &u.id})
}

// copyPieces copies the round's source ranges as parts 2, 3, ….
func (u *roundUpload) copyPieces(ctx context.Context, entries []plan.PlacedEntry) error {
	g, gctx := errgroup.WithContext(ctx)
	for i, pc := range u.pieces {
		if !pc.Copy {
			continue
		}
		n := int32(i + 2)
		seg := pc.Segments[0]
		e := &entries[seg.Entry]
		g.Go(func() error {
			in := s3part.CopyPart(s3part.Part{Bucket: u.bucket, Key: u.key, UploadID: u.id, Number: n}, pinned(e.Source, e.Size), seg.From, seg.To)
			out, err := u.c.UploadPartCopy(gctx, in)
			if err != nil {
				return s3Error("UploadPartCopy", e.Source.Bucket, e.Source.Key, true, err)
			}
			u.etags[n-1], u.sums[n-1], err = copied(out, e.Source.Bucket, e.Source.Key)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	u.copied = true
	return nil
}

// finish appends the round's pieces to x and returns the new object and the
// header bytes sent. It copies what is built as part 1, sends the header
// pieces, copies the source ranges not copied yet, and completes. While what
// is built is shorter than a part, part 1 is its last MinPartSize bytes, the
// end of the pad and all of the content.
func (u *roundUpload) finish(ctx context.Context, entries []plan.PlacedEntry, x built) (built, int64, error) {
	from, to, lead := x.lead, x.lead+x.content, int64(0)
	if x.content < s3part.MinPartSize {
		from, lead = to-s3part.MinPartSize, s3part.MinPartSize-x.content
	}
	var added int64
	for _, pc := range u.pieces {
		added += pc.Size
	}
	g, gctx := errgroup.WithContext(ctx)
	if !u.copied {
		g.Go(func() error { return u.copyPieces(gctx, entries) })
	}
	if !u.sent {
		g.Go(func() error { return u.sendPieces(gctx, entries) })
	}
	g.Go(func() error {
		// The first round copies the whole pad.
		in := s3part.CopyPart(s3part.Part{Bucket: u.bucket, Key: u.key, UploadID: u.id, Number: 1}, s3part.Pinned{Bucket: u.bucket, Key: x.key, Size: x.lead + x.content}, from, to)
		out, err := u.c.UploadPartCopy(gctx, in)
		if err != nil {
			return s3Error("UploadPartCopy", u.bucket, x.key, false, err)
		}
		u.etags[0], u.sums[0], err = copied(out, u.bucket, x.key)
		return err
	})
	if err := g.Wait(); err != nil {
		return x, 0, err
	}
	parts := make([]types.CompletedPart, len(u.etags))
	for i, t := range u.etags {
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: aws.String(t)}
		if u.checksum {
			parts[i].ChecksumCRC32 = aws.String(u.sums[i])
		}
	}
	in := &s3.CompleteMultipartUploadInput{Bucket: &u.bucket, Key: &u.key, UploadId: &u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
	if u.checksum {
		in.ChecksumType = types.ChecksumTypeFullObject
	}
	next := built{key: u.key, lead: lead, content: x.content + added}
	done, err := u.c.CompleteMultipartUpload(ctx, in)
	if err != nil {
		if done = u.completedBefore(ctx, err, next.lead+next.content); done == nil {
			return x, 0, s3Error("CompleteMultipartUpload", u.bucket, u.key, false, err)
		}
	}
	u.finished = true
	if u.checksum {
		next.stored = aws.ToString(done.ChecksumCRC32)
	}
	return next, u.uploaded, nil
}

// completedBefore returns the completion of a round whose Complete failed
// with NoSuchUpload because an earlier attempt, an SDK retry whose answer
// was lost, completed it; the round's object is there, of its size. Its key
// is this attempt's own, so nothing else made it. It returns nil otherwise.
func (u *roundUpload) completedBefore(ctx context.Context, err error, size int64) *s3.CompleteMultipartUploadOutput {
	if !s3err.IsCode(err, "NoSuchUpload") {
		return nil
	}
	h, herr := u.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &u.bucket, Key: &u.key, ChecksumMode: types.ChecksumModeEnabled})
	if herr != nil || aws.ToInt64(h.ContentLength) != size {
		return nil
	}
	return &s3.CompleteMultipartUploadOutput{ETag: h.ETag, ChecksumCRC32: h.ChecksumCRC32}
}

// sendPieces sends the round's header bytes and the ranges S3 cannot copy as
// their parts. Every byte is made first, so a missing CRC stops the round
// before anything is in flight.
func (u *roundUpload) sendPieces(ctx context.Context, entries []plan.PlacedEntry) error {
	bodies := make([][]byte, len(u.pieces))
	for i, pc := range u.pieces {
		if !pc.Copy {
			var err error
			if bodies[i], err = sentBytes(ctx, u.c, entries, pc); err != nil {
				return err
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	var uploaded int64
	for i, pc := range u.pieces {
		if pc.Copy {
			continue
		}
		n := int32(i + 2)
		body := bodies[i]
		uploaded += int64(len(body))
		in := &s3.UploadPartInput{Bucket: &u.bucket, Key: &u.key, UploadId: &u.id, PartNumber: &n,
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}
		if u.checksum {
			in.ChecksumCRC32 = aws.String(s3part.CRCBase64(crc32.ChecksumIEEE(body)))
		}
		g.Go(func() error {
			out, err := u.c.UploadPart(gctx, in)
			if err != nil {
				return s3Error("UploadPart", u.bucket, u.key, false, err)
			}
			u.etags[n-1], u.sums[n-1] = aws.ToString(out.ETag), aws.ToString(out.ChecksumCRC32)
			if u.sums[n-1] == "" {
				u.sums[n-1] = aws.ToString(in.ChecksumCRC32)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	u.sent, u.uploaded = true, uploaded
	return nil
}

// sentBytes returns the bytes of a piece the worker sends. They are local
// headers or parts of them, each with its entry's CRC-32, which the plan made
// sure is known, and the ranges of sources partwork.CopyRange says S3 cannot
// copy, read.
func sentBytes(ctx context.Context, c S3, entries []plan.PlacedEntry, pc partwork.ChainPiece) ([]byte, error) {
	out := make([]byte, 0, pc.Size)
	var hdr []byte
	for _, s := range pc.Segments {
		e := &entries[s.Entry]
		if s.Kind == partwork.SegmentData {
			n := len(out)
			out = out[:n+int(s.To-s.From)]
			if err := getRange(ctx, c, sourceOf(e.Source), s.From, out[n:]); err != nil {
				return nil, err
			}
			continue
		}
		if !e.CRC32.Known {
			return nil, &plan.UnknownCRCError{Entry: e.Name}
		}
		hdr = plan.AppendLocalHeader(hdr[:0], e, e.CRC32.Sum)
		out = append(out, hdr[s.From:s.To]...)
	}
	return out, nil
}

// chainCRC returns the CRC-32 a chain part's bytes must have, when every
// piece is a whole header or a whole object's data with a known CRC.
func chainCRC(entries []plan.PlacedEntry, item *plan.PartJob) (uint32, bool) {
	var crc uint32
	var hdr []byte
	for _, s := range partwork.Segments(entries, item.End, item.Start, item.End) {
		e := &entries[s.Entry]
		if !e.CRC32.Known {
			return 0, false
		}
		switch s.Kind {
		case partwork.SegmentHeader:
			hdr = plan.AppendLocalHeader(hdr[:0], e, e.CRC32.Sum)
			crc = crc32.Update(crc, crc32.IEEETable, hdr[s.From:s.To])
		case partwork.SegmentData:
			if s.From != 0 || s.To != e.Size {
				return 0, false
			}
			crc = zipformat.CombineCRC(crc, e.CRC32.Sum, e.Size)
		}
	}
	return crc, true
}

// binDepth is how many consumed round objects may wait for their delete.
const binDepth = 2

// roundBin deletes a chain's round objects once the next round has copied
// them, so that the work bucket holds a few per chain, whatever its length,
// instead of every round until the work prefix is deleted. A chain of 10,000
// tiny entries builds 20,000 objects of 5 MiB or more. The deletes run one
// at a time beside the rounds and add nothing to a round's latency; a chain
// that outruns them waits, so what it holds stays bounded.
type roundBin struct {
	keys chan string
	done chan struct{}
}

// newRoundBin starts the goroutine that deletes the round objects dropped in
// the bin, from bucket.
func newRoundBin(ctx context.Context, c S3, bucket string, log *slog.Logger) *roundBin {
	b := &roundBin{keys: make(chan string, binDepth), done: make(chan struct{})}
	// A chain that failed or was cancelled removes what it built all the same.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(b.done)
		failed := 0
		var first error
		for key := range b.keys {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil && !s3err.NotFound(err) {
				if failed++; first == nil {
					first = s3Error("DeleteObject", bucket, key, false, err)
				}
			}
		}
		if failed > 0 {
			// Not fatal, since the finalizer or the abort deletes the work prefix.
			log.Warn("chain round objects not deleted; they go with the work prefix", "objects", failed, "error", first.Error())
		}
	}()
	return b
}

// drop deletes a round object nothing will read again.
func (b *roundBin) drop(key string) { b.keys <- key }

// close waits for the deletes asked for.
func (b *roundBin) close() {
	close(b.keys)
	<-b.done
}
