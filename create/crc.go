package create

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// This file tells the worker and the reader the CRC-32 of a range of an
// object, and how it is known. The sources, in the order asked, are the
// plan, a copy the part job made, the checksum S3 stores for the whole
// object, S3's answer to a copy into a probe upload, pieces combined, and
// last the bytes read. A server's answer for a copy is trusted only where
// implausibleCopyCRC finds it can be the copied bytes' own.

// copyCRCs holds what a part job's carried copies taught about its entries'
// CRC-32s, by entry.
type copyCRCs struct {
	// whole holds entries' whole CRC-32s, from a whole copy's answer, from
	// what S3 stores of the object, or learned for a chain by
	// learnNeededCRCs. The part reports them to the finalizer.
	whole map[plan.EntryIndex]uint32
	// tails holds the copied tails of entries whose object S3 stores no
	// CRC-32 of. S3's answer is the tail's own, which entryCRC combines with
	// a start streamed in this part.
	tails map[plan.EntryIndex]plan.Tail
	// rests holds the copied rests of entries whose whole CRC-32 is known.
	// S3's answer for the rest tells startCRC the streamed start's CRC-32
	// without a probe.
	rests map[plan.EntryIndex]plan.Tail
}

// newCopyCRCs returns an empty copyCRCs.
func newCopyCRCs() *copyCRCs {
	return &copyCRCs{whole: map[plan.EntryIndex]uint32{}, tails: map[plan.EntryIndex]plan.Tail{}, rests: map[plan.EntryIndex]plan.Tail{}}
}

// hasTail says whether a copy carried entry i's tail, S3 storing no CRC-32
// of its object.
func (k *copyCRCs) hasTail(i plan.EntryIndex) bool {
	_, ok := k.tails[i]
	return ok
}

// apply sets the whole CRC-32s taught in entries.
func (k *copyCRCs) apply(entries []plan.PlacedEntry) {
	for i := range entries {
		if crc, ok := k.whole[entries[i].Index]; ok {
			entries[i].CRC32 = plan.KnownCRC(crc)
		}
	}
}

// startCRC returns the CRC-32 of the start [0, s.To) of entry e when a copy
// of its rest taught it, splitting the rest's CRC-32 off the whole's.
func (k *copyCRCs) startCRC(e *plan.PlacedEntry, s partwork.Segment) (uint32, bool) {
	rest, copied := k.rests[e.Index]
	if s.From != 0 || !copied || !e.CRC32.Known || s.To+rest.Len != e.Size {
		return 0, false
	}
	if implausibleCopyCRC(e.CRC32, false, s3part.CRCBase64(rest.CRC)) != "" {
		return 0, false
	}
	return zipformat.SplitCRC(e.CRC32.Sum, rest.CRC, rest.Len), true
}

// entryCRC returns the CRC-32 of entry e, given start, the CRC-32 of its
// start [0, s.To). It is start itself when the start is the whole entry, or
// start combined with the copied tail's CRC-32 when the rest is one.
func (k *copyCRCs) entryCRC(e *plan.PlacedEntry, s partwork.Segment, start uint32) (uint32, bool) {
	if s.To == e.Size {
		return start, true
	}
	if tail, ok := k.tails[e.Index]; ok && s.To+tail.Len == e.Size {
		return zipformat.CombineCRC(start, tail.CRC, tail.Len), true
	}
	return 0, false
}

// askBeforeCopy asks S3 for the CRC-32 it stores of the object whose tail
// c carries, when the plan does not know it. It asks before the copy so
// that copyPart can tell an answer that is the stored checksum from the
// range's own.
func (b *partBuilder) askBeforeCopy(ctx context.Context, c *plan.PartJob, k *copyCRCs) error {
	if c.CarriedAs != plan.CarriedTail || c.CRC32.Known {
		return nil
	}
	crc, ok, err := storedCRC(ctx, b.s3, *c.Source, c.SourceSize)
	if err != nil {
		return err
	}
	if ok {
		c.CRC32, k.whole[c.First] = plan.KnownCRC(crc), crc
	}
	return nil
}

// learnFromCopy records what S3's answer to carried copy c teaches.
func (b *partBuilder) learnFromCopy(ctx context.Context, c *plan.PartJob, answer string, k *copyCRCs) error {
	switch c.CarriedAs {
	case plan.CarriedWhole:
		crc, err := b.copiedCRC(ctx, c.Source, c.SourceSize, answer)
		if err != nil {
			return err
		}
		if c.CRC32.Known && c.CRC32.Sum != crc {
			return failure.Checksum("s3://%s/%s: S3 reports CRC-32 %08x for a copy of the whole object, the plan has %08x", c.Source.Bucket, c.Source.Key, crc, c.CRC32.Sum)
		}
		k.whole[c.First] = crc
	case plan.CarriedTail:
		crc, ok := s3part.DecodeCRC(answer)
		switch {
		case c.CRC32.Known && ok:
			k.rests[c.First] = plan.Tail{CRC: crc, Len: c.Size()}
		case c.CRC32.Known:
		case ok:
			// S3 stores no CRC-32 of the object, so its answer is the range's own.
			k.tails[c.First] = plan.Tail{CRC: crc, Len: c.Size()}
		default:
			whole, err := b.copiedCRC(ctx, c.Source, c.SourceSize, "")
			if err != nil {
				return err
			}
			k.whole[c.First] = whole
		}
	default:
		return fmt.Errorf("the plan says not what it copies (carriedAs %q)", c.CarriedAs)
	}
	return nil
}

// storedCRC asks S3 for the CRC-32 it stores for the whole object. ok is
// false when S3 stores none, another algorithm, or a composite of parts.
func storedCRC(ctx context.Context, c S3, src plan.Source, size int64) (uint32, bool, error) {
	crc, ok, _, err := headCRC(ctx, c, src, size)
	return crc, ok, err
}

// headCRC is storedCRC that also says whether S3 stores a composite CRC-32
// of the object's parts, which some servers answer a copy with.
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

// objectCRC returns a source object's CRC-32. It takes the one S3 stores for
// the whole object, else one S3 computes in probe when probe is given, else
// it reads the object.
func objectCRC(ctx context.Context, c S3, probe *crcProbe, e *plan.PlacedEntry) (uint32, error) {
	return sourceCRC(ctx, c, probe, crcAsked{src: e.Source, size: e.Size})
}

// crcAsked is a source whose CRC-32 is asked for, pinned, with its planned
// size and, when known, what S3 stores of its CRC-32, StoredNone or
// StoredComposite. An empty stored asks HeadObject first.
type crcAsked struct {
	src    plan.Source
	size   int64
	stored string
}

// sourceCRC returns the CRC-32 of the source a asks about, as objectCRC does.
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
		// CRC-32 with that composite. versitygw does, where S3 answers the
		// copied bytes' CRC. A one-byte copy tells before S3 copies it all.
		first := int64(0)
		if composite {
			first = 1
		}
		crc, ok, err := probe.crc(ctx, src, size, first)
		if err != nil || ok {
			return crc, err
		}
	}
	// S3 stores no whole-object CRC-32 and computes none, so the object is read.
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

// crcProbe has S3 compute objects' CRC-32s without downloading them, since a
// copy of an object into a multipart upload created with CRC-32 answers with
// the copied bytes' CRC. The upload is never completed, so parts of any size
// will do, and it is aborted when planning or the worker's batch ends.
type crcProbe struct {
	c           S3
	bucket, key string
	once        sync.Once
	uploadID    string
	err         error
	next        atomic.Int32
}

// start creates the probe's upload on the first call and returns the error
// that creating it met, on every call.
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

// crc returns the CRC-32 of the source's bytes. ok is false when S3 did not
// report a usable one, and the caller then reads the object. The first range
// copied is first bytes long when first > 0, else up to 5 GiB like the rest.
// When partwork.CopyRange says S3 copies no such first range, nothing is
// copied, since a whole copy could only be answered as uselessly.
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
// source of size bytes, copied into the probe's upload. ok is false when the
// answer carries none or when partwork.CopyRange says S3 copies no such range.
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

// close aborts the probe's upload, if it was created.
func (p *crcProbe) close(ctx context.Context) {
	if p.uploadID != "" {
		p.c.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: &p.bucket, Key: &p.key, UploadId: &p.uploadID})
	}
}

// copiedCRC returns the CRC-32 of a whole object that was just copied, from
// S3's answer to the copy. When the answer has none, or a composite of the
// source's parts, it asks for or reads the object as the planner would.
func (b *partBuilder) copiedCRC(ctx context.Context, src *plan.Source, size int64, answer string) (uint32, error) {
	if crc, ok := s3part.DecodeCRC(answer); ok {
		return crc, nil
	}
	e := plan.PlacedEntry{Entry: &plan.Entry{Name: src.Key, Source: *src, Size: size}}
	return objectCRC(ctx, b.s3, nil, &e)
}

// storedForRange returns the CRC-32 S3 stores of the source a copy part
// copies a range of, which lets implausibleCopyCRC tell a server's answer of
// that checksum from the range's own. It is the plan's when the plan has it,
// else asked with a HEAD. A copy of a whole source needs none, its answer
// being the CRC-32 itself. It is unknown when S3 stores none or a composite,
// which the answer shows as one.
func (b *partBuilder) storedForRange(ctx context.Context, item *plan.PartJob) (plan.CRC, error) {
	if item.CRC32.Known || wholeCopy(item) {
		return item.CRC32, nil
	}
	crc, ok, err := storedCRC(ctx, b.s3, *item.Source, item.SourceSize)
	if err != nil || !ok {
		return plan.CRC{}, err
	}
	return plan.KnownCRC(crc), nil
}

// wholeCopy says whether a copy part copies its whole source.
func wholeCopy(item *plan.PartJob) bool {
	return item.SourceRange[0] == 0 && item.SourceRange[1] == item.SourceSize
}

// implausibleCopyCRC says why got, the CRC-32 S3 answered a copy with,
// cannot be the CRC-32 of the bytes copied, or returns "" when it can be.
// stored is the source's whole CRC-32 when the plan or S3 knows it, and
// whole says the copy was of the whole source. A copy of the whole source
// must be answered with stored, and a copy of a range must not, since
// versitygw 1.8 answers a ranged copy of a source stored with a CRC-32 with
// that CRC-32, where S3 answers the range's.
func implausibleCopyCRC(stored plan.CRC, whole bool, got string) string {
	switch {
	case got == "":
		return ""
	case strings.Contains(got, "-"):
		return "a composite checksum of the source's parts"
	case !stored.Known:
		return ""
	case whole && got != s3part.CRCBase64(stored.Sum):
		return "not the source's CRC-32 for a copy of the whole source"
	case !whole && got == s3part.CRCBase64(stored.Sum):
		return "the whole source's CRC-32 for a copy of a range"
	}
	return ""
}

// unprobed returns a data segment's CRC-32 when S3 tells it without a
// probe's copy. An entry's whole data has the CRC-32 S3 stores of the
// object, and an entry's start is told by its copied rest, as
// copyCRCs.startCRC does. ok false leaves the segment to the probe, and so
// does a HEAD that failed, the probe or the assembled part then saying what
// is wrong.
func (b *partBuilder) unprobed(ctx context.Context, entries []plan.PlacedEntry, s partwork.Segment, k *copyCRCs) (uint32, bool, error) {
	e := &entries[s.Entry]
	if partwork.WholeData(entries, s) {
		crc, ok, err := storedCRC(ctx, b.s3, e.Source, e.Size)
		if err != nil && ctx.Err() == nil {
			return 0, false, nil
		}
		return crc, ok, err
	}
	crc, ok := k.startCRC(e, s)
	return crc, ok, nil
}

// probeCRC returns the CRC-32 of bytes [from, to) of an entry's source, from
// S3's answer to a copy of them into the probe upload. An answer without a
// plain CRC-32 of the range returns errNotPiped.
func probeCRC(ctx context.Context, probe *crcProbe, e *plan.PlacedEntry, from, to int64) (uint32, error) {
	crc, ok, err := probe.rangeCRC(ctx, e.Source, e.Size, from, to)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, errNotPiped
	case implausibleCopyCRC(e.CRC32, from == 0 && to == e.Size, s3part.CRCBase64(crc)) != "":
		return 0, errNotPiped
	}
	return crc, nil
}

// rangeCRC returns the CRC-32 of the copy part's source range and how many
// bytes it read to learn it. A copy of the whole object whose CRC-32 the plan
// knows reads nothing. For a tail after a streamed start, the rest of such an
// object, it reads only the start, since crc(whole) is crc(start) shifted by
// the rest's length, xor crc(rest). Anything else reads the range.
func rangeCRC(ctx context.Context, c S3, src *sourceRef, item *plan.PartJob) (uint32, int64, error) {
	from, to := item.SourceRange[0], item.SourceRange[1]
	if item.CRC32.Known && to == item.SourceSize {
		if from == 0 {
			return item.CRC32.Sum, 0, nil
		}
		if from < to-from {
			start, err := readCRC(ctx, c, src, 0, from)
			if err != nil {
				return 0, 0, err
			}
			return item.CRC32.Sum ^ zipformat.CombineCRC(start, 0, to-from), from, nil
		}
	}
	crc, err := readCRC(ctx, c, src, from, to)
	return crc, to - from, err
}

// readCRC streams bytes [from, to) of a source through CRC-32.
func readCRC(ctx context.Context, c S3, src *sourceRef, from, to int64) (uint32, error) {
	r := newRangeReader(ctx, c, src, from, to)
	defer r.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, r); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// learnNeededCRCs learns the CRC-32s of the entries whose headers a chain
// part writes and whose CRC-32 neither the plan nor this job's copies gave;
// plan.Plan.CRCsNeeded leaves them to the worker. It asks for all at once,
// each from S3's store, else a probe, else a read, and sets them in entries
// and in k's whole CRC-32s, which the part reports to the finalizer.
func (b *partBuilder) learnNeededCRCs(ctx context.Context, item *plan.PartJob, entries []plan.PlacedEntry, k *copyCRCs) error {
	var need []int // positions in entries
	for _, i := range item.NeedCRC {
		if k := int(i - item.First); k >= 0 && k < len(entries) && !entries[k].CRC32.Known {
			need = append(need, k)
		}
	}
	crcs := make([]uint32, len(need))
	err := forEach(ctx, b.cfg.GetConcurrency, len(need), func(ctx context.Context, j int) error {
		crc, err := objectCRC(ctx, b.s3, b.probe, &entries[need[j]])
		crcs[j] = crc
		return err
	})
	if err != nil {
		return err
	}
	for j, at := range need {
		entries[at].CRC32, k.whole[entries[at].Index] = plan.KnownCRC(crcs[j]), crcs[j]
	}
	return nil
}
