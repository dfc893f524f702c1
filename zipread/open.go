package zipread

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// Client is the part of the S3 API an Archive reads with. *s3.Client has it.
type Client interface {
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// FormatError says the object is not a ZIP archive s3zip can read, because
// its end records or central directory are missing, truncated or
// inconsistent.
type FormatError struct {
	Bucket, Key string
	Offset      int64 // where in the object the problem was found
	What        string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("s3://%s/%s: not a readable ZIP archive: %s (at offset %d)", e.Bucket, e.Key, e.What, e.Offset)
}

// Entry is one central directory header.
type Entry struct {
	Name             string
	Method           uint16 // MethodStore or MethodDeflate for entries s3zip can read
	Flags            uint16 // general purpose bit flags
	CRC32            uint32
	CompressedSize   int64
	UncompressedSize int64
	Offset           int64 // of the entry's local header
	Modified         time.Time
	Mode             fs.FileMode
	ReaderVersion    uint16 // "version needed to extract"
	Zip64            bool   // the central header carries a ZIP64 extra field
	// MetaField is the data of the central header's object metadata extra
	// field, zipformat.MetadataExtraID, or nil when it has none. `create
	// --keep-metadata` writes it and Metadata decodes it.
	MetaField []byte
}

// Metadata returns what the entry's metadata extra field says of the object
// it was made from. It returns nil when the entry has none and an error when
// the field is malformed.
func (e *Entry) Metadata() (*zipformat.Metadata, error) {
	if e.MetaField == nil {
		return nil, nil
	}
	return zipformat.ParseMetadataExtra(e.MetaField)
}

// IsDir reports whether the entry is a directory, whose name ends in "/".
func (e *Entry) IsDir() bool { return len(e.Name) > 0 && e.Name[len(e.Name)-1] == '/' }

// Archive is a ZIP archive stored as an S3 object, read as far as its
// central directory. Entry data is read by Verify and Extract.
type Archive struct {
	Bucket, Key string
	Size        int64  // of the object
	ETag        string // every read is made with If-Match on it
	// ChecksumCRC32 is the whole object's CRC-32 in base64 as S3 stores it,
	// when it stores one.
	ChecksumCRC32 string
	Entries       []Entry

	Zip64           bool  // the end records include a ZIP64 end record
	CentralDirStart int64 // offset of the central directory
	CentralDirSize  int64
	// Trailing is how many bytes follow the end of central directory
	// record and its comment, as bsdtar writing to a pipe pads the archive
	// with zeros to its block size. TrailingZeros says they are all zeros.
	Trailing      int64
	TrailingZeros bool

	client      Client
	endProblems []string // inconsistencies in the end records that did not stop reading
	// tail is the object's last bytes from tailStart on, as Open read them
	// beside its HEAD; reads within it are served from it.
	tail      []byte
	tailStart int64
}

// openTail is how much of the object's end Open reads at once, beside the
// HEAD. It holds the end records, at most 64 KiB and a bit, and for an
// archive of up to ten thousand entries or so the whole central directory,
// so that opening takes one round trip instead of three.
const openTail = 1 << 20

// Open reads the end records and the central directory of s3://bucket/key.
// Structures it cannot read give a *FormatError; S3 failures are wrapped.
func Open(ctx context.Context, client Client, bucket, key string) (*Archive, error) {
	// The HEAD and a GET of the object's last openTail bytes go at once.
	// The tail is used only if it has the HEAD's ETag and size, else the
	// end is read again with If-Match, as without it.
	type tailRead struct {
		b            []byte
		start, total int64
		etag         string
		err          error
	}
	tailc := make(chan tailRead, 1)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		var t tailRead
		t.b, t.start, t.total, t.etag, t.err = readSuffix(tctx, client, bucket, key, openTail)
		tailc <- t
	}()
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return nil, fmt.Errorf("head s3://%s/%s: %w", bucket, key, err)
	}
	a := &Archive{Bucket: bucket, Key: key, Size: aws.ToInt64(head.ContentLength), ETag: aws.ToString(head.ETag), client: client}
	if head.ChecksumType != types.ChecksumTypeComposite {
		a.ChecksumCRC32 = aws.ToString(head.ChecksumCRC32)
	}
	if t := <-tailc; t.err == nil && t.etag != "" && t.etag == a.ETag && t.total == a.Size {
		a.tail, a.tailStart = t.b, t.start
	}
	if err := a.readEnd(ctx); err != nil {
		return nil, err
	}
	if err := a.readCentralDirectory(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Archive) formatErr(off int64, format string, args ...any) error {
	return &FormatError{Bucket: a.Bucket, Key: a.Key, Offset: off, What: fmt.Sprintf(format, args...)}
}

// readSuffix reads the object's last n bytes, or all of it if shorter, with
// a suffix range, and says where they start, the object's size and its ETag.
// It checks that they run to the object's end.
func readSuffix(ctx context.Context, client Client, bucket, key string, n int64) (b []byte, start, total int64, etag string, err error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: aws.String(fmt.Sprintf("bytes=-%d", n))})
	if err != nil {
		return nil, 0, 0, "", err
	}
	defer out.Body.Close()
	var last int64
	if _, err := fmt.Sscanf(aws.ToString(out.ContentRange), "bytes %d-%d/%d", &start, &last, &total); err != nil {
		return nil, 0, 0, "", fmt.Errorf("suffix range answered with Content-Range %q", aws.ToString(out.ContentRange))
	}
	if last != total-1 || last < start || last-start+1 > n {
		return nil, 0, 0, "", fmt.Errorf("suffix range answered with Content-Range %q", aws.ToString(out.ContentRange))
	}
	// Cut or stalled, the rest is asked for by its bytes, pinned to this ETag.
	body := s3rate.Resume(ctx, client, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: aws.String(fmt.Sprintf("bytes=%d-%d", start, last))}, out, start)
	b = make([]byte, last-start+1)
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, 0, 0, "", err
	}
	return b, start, total, aws.ToString(out.ETag), nil
}

// get opens a ranged GET of [start, end), or a reader of the tail Open
// read when the range is within it. s3rate.Resume resumes a body that
// stalls or is cut from the byte it reached.
func (a *Archive) get(ctx context.Context, start, end int64) (io.ReadCloser, error) {
	if a.tail != nil && start >= a.tailStart && end <= a.tailStart+int64(len(a.tail)) {
		return io.NopCloser(bytes.NewReader(a.tail[start-a.tailStart : end-a.tailStart])), nil
	}
	in := &s3.GetObjectInput{
		Bucket: aws.String(a.Bucket), Key: aws.String(a.Key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", start, end-1)),
	}
	if a.ETag != "" {
		in.IfMatch = aws.String(a.ETag)
	}
	out, err := a.client.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s bytes %d-%d: %w", a.Bucket, a.Key, start, end-1, err)
	}
	return s3rate.Resume(ctx, a.client, in, out, start), nil
}

// readRange returns the bytes [start, end) of the object.
func (a *Archive) readRange(ctx context.Context, start, end int64) ([]byte, error) {
	body, err := a.get(ctx, start, end)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b := make([]byte, end-start)
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, fmt.Errorf("read s3://%s/%s bytes %d-%d: %w", a.Bucket, a.Key, start, end-1, err)
	}
	return b, nil
}

// maxTrailing is how many bytes after the end of central directory record
// and its comment readEnd looks through for it. Info-ZIP and Go's
// archive/zip read archives followed by other bytes, and bsdtar writing to
// a pipe pads its archive with zeros to its 10240-byte block.
const maxTrailing = 64 << 10

// readEnd finds the end of central directory record in the object's last
// bytes, follows a ZIP64 locator to the ZIP64 end record, and checks that
// they agree, as APPNOTE 4.3.14 to 4.3.16 and 4.4.1.4 define them. The
// record is looked for first where its comment ends with the object, then,
// as Info-ZIP does, followed by up to maxTrailing other bytes. The last
// record whose central directory ends where the end records start is taken.
func (a *Archive) readEnd(ctx context.Context) error {
	if a.Size < zipformat.EndLen {
		return a.formatErr(0, "object is %d bytes, shorter than an end of central directory record (%d)", a.Size, zipformat.EndLen)
	}
	tailStart := max(0, a.Size-(maxTrailing+zipformat.EndLen+zipformat.MaxCommentLen+zipformat.Zip64LocatorLen+zipformat.Zip64EndLen))
	tail, err := a.readRange(ctx, tailStart, a.Size)
	if err != nil {
		return err
	}
	// The last record comes first, as an archive without a comment ends
	// with it and a signature inside a comment must not be taken for the
	// record.
	for i := len(tail) - zipformat.EndLen; i >= 0 && len(tail)-zipformat.EndLen-i <= zipformat.MaxCommentLen; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) == zipformat.EndSignature &&
			int(binary.LittleEndian.Uint16(tail[i+20:])) == len(tail)-zipformat.EndLen-i {
			return a.readEndAt(ctx, tail, tailStart, i)
		}
	}
	var firstErr error
	for i := len(tail) - zipformat.EndLen; i >= 0 && len(tail)-zipformat.EndLen-i <= zipformat.MaxCommentLen+maxTrailing; i-- {
		end := i + zipformat.EndLen
		if binary.LittleEndian.Uint32(tail[i:]) != zipformat.EndSignature || end+int(binary.LittleEndian.Uint16(tail[i+20:])) > len(tail) {
			continue
		}
		end += int(binary.LittleEndian.Uint16(tail[i+20:]))
		err := a.readEndAt(ctx, tail, tailStart, i)
		if err == nil {
			a.Trailing = int64(len(tail) - end)
			a.TrailingZeros = !slices.ContainsFunc(tail[end:], func(b byte) bool { return b != 0 })
			return nil
		}
		var fe *FormatError
		if !errors.As(err, &fe) {
			return err
		}
		firstErr = cmp.Or(firstErr, err)
		a.Zip64, a.endProblems = false, nil
	}
	if firstErr != nil {
		return firstErr
	}
	return a.formatErr(a.Size, "no end of central directory record (signature 0x%08x) in the last %d bytes; truncated or not a ZIP archive", zipformat.EndSignature, len(tail))
}

// readEndAt reads the end of central directory record at tail[pos:] and the
// ZIP64 end records it points to, and sets where the central directory is.
func (a *Archive) readEndAt(ctx context.Context, tail []byte, tailStart int64, pos int) error {
	var err error
	endOff := tailStart + int64(pos)
	b := readBuf(tail[pos+4:])
	disk, cdDisk := b.u16(), b.u16()
	diskCount, count := b.u16(), b.u16()
	cdSize32, cdOff32 := b.u32(), b.u32()
	if disk != 0 && disk != zipformat.Uint16Max || cdDisk != 0 && cdDisk != zipformat.Uint16Max {
		return a.formatErr(endOff, "end of central directory names disk %d and central directory disk %d; multi-disk archives are not supported", disk, cdDisk)
	}
	sentinel := diskCount == zipformat.Uint16Max || count == zipformat.Uint16Max || cdSize32 == zipformat.Uint32Max || cdOff32 == zipformat.Uint32Max
	locOff := endOff - zipformat.Zip64LocatorLen
	hasLocator := locOff >= 0 && binary.LittleEndian.Uint32(a.tailAt(tail, tailStart, locOff, 4)) == zipformat.Zip64LocatorSignature

	entries, cdSize, cdOff := uint64(count), uint64(cdSize32), uint64(cdOff32)
	endRecordsStart := endOff
	if !hasLocator && sentinel {
		return a.formatErr(endOff, "end of central directory uses ZIP64 sentinels (entries %d, size 0x%x, offset 0x%x) but no ZIP64 end of central directory locator precedes it", count, cdSize32, cdOff32)
	}
	if hasLocator {
		a.Zip64 = true
		lb := readBuf(a.tailAt(tail, tailStart, locOff, zipformat.Zip64LocatorLen)[4:])
		z64Disk, z64Off, disks := lb.u32(), lb.u64(), lb.u32()
		if z64Disk != 0 || disks > 1 {
			return a.formatErr(locOff, "ZIP64 locator names disk %d of %d; multi-disk archives are not supported", z64Disk, disks)
		}
		if locOff < zipformat.Zip64EndLen || z64Off > uint64(locOff-zipformat.Zip64EndLen) {
			return a.formatErr(locOff, "ZIP64 locator points to offset %d, but the ZIP64 end record must end by the locator at %d", z64Off, locOff)
		}
		var rec []byte
		if int64(z64Off) >= tailStart {
			rec = a.tailAt(tail, tailStart, int64(z64Off), zipformat.Zip64EndLen)
		} else if rec, err = a.readRange(ctx, int64(z64Off), int64(z64Off)+zipformat.Zip64EndLen); err != nil {
			return err
		}
		zb := readBuf(rec)
		if zb.u32() != zipformat.Zip64EndSignature {
			return a.formatErr(int64(z64Off), "ZIP64 locator points to offset %d, where there is no ZIP64 end of central directory record (signature 0x%08x)", z64Off, zipformat.Zip64EndSignature)
		}
		recSize := zb.u64()
		zb.u16() // version made by
		zb.u16() // version needed
		zDisk, zcdDisk := zb.u32(), zb.u32()
		zDiskCount, zCount := zb.u64(), zb.u64()
		zcdSize, zcdOff := zb.u64(), zb.u64()
		if zDisk != 0 || zcdDisk != 0 {
			return a.formatErr(int64(z64Off), "ZIP64 end record names disk %d and central directory disk %d; multi-disk archives are not supported", zDisk, zcdDisk)
		}
		if end := z64Off + 12 + recSize; end != uint64(locOff) {
			a.endProblems = append(a.endProblems, fmt.Sprintf("ZIP64 end record at %d declares %d bytes, ending at %d, but the locator is at %d", z64Off, recSize, end, locOff))
		}
		if zDiskCount != zCount {
			a.endProblems = append(a.endProblems, fmt.Sprintf("ZIP64 end record: %d entries on this disk but %d in total", zDiskCount, zCount))
		}
		// A field that is not a sentinel must agree with the ZIP64 record.
		if count != zipformat.Uint16Max && uint64(count) != zCount {
			a.endProblems = append(a.endProblems, fmt.Sprintf("end of central directory says %d entries, the ZIP64 end record %d", count, zCount))
		}
		if cdSize32 != zipformat.Uint32Max && uint64(cdSize32) != zcdSize {
			a.endProblems = append(a.endProblems, fmt.Sprintf("end of central directory says central directory size %d, the ZIP64 end record %d", cdSize32, zcdSize))
		}
		if cdOff32 != zipformat.Uint32Max && uint64(cdOff32) != zcdOff {
			a.endProblems = append(a.endProblems, fmt.Sprintf("end of central directory says central directory offset %d, the ZIP64 end record %d", cdOff32, zcdOff))
		}
		entries, cdSize, cdOff = zCount, zcdSize, zcdOff
		endRecordsStart = int64(z64Off)
	} else if diskCount != count {
		a.endProblems = append(a.endProblems, fmt.Sprintf("end of central directory: %d entries on this disk but %d in total", diskCount, count))
	}
	if cdOff > uint64(endRecordsStart) || cdSize > uint64(endRecordsStart) || cdOff+cdSize != uint64(endRecordsStart) {
		return a.formatErr(endRecordsStart, "central directory at offset %d with size %d would end at %d, but the end records start at %d", cdOff, cdSize, cdOff+cdSize, endRecordsStart)
	}
	if entries > cdSize/zipformat.CentralHeaderLen {
		return a.formatErr(endRecordsStart, "%d entries cannot fit in a central directory of %d bytes", entries, cdSize)
	}
	a.CentralDirStart, a.CentralDirSize = int64(cdOff), int64(cdSize)
	a.Entries = make([]Entry, 0, entries)
	return nil
}

// tailAt returns n bytes at object offset off from the tail buffer, or nil,
// which reads as no signature, when they are not all in it.
func (a *Archive) tailAt(tail []byte, tailStart, off int64, n int) []byte {
	i := off - tailStart
	if i < 0 || i+int64(n) > int64(len(tail)) {
		return make([]byte, n)
	}
	return tail[i : i+int64(n)]
}

// readCentralDirectory streams the central directory with one ranged GET, so
// that a directory of millions of entries needs no more memory than its entries.
func (a *Archive) readCentralDirectory(ctx context.Context) error {
	want := cap(a.Entries)
	if a.CentralDirSize == 0 {
		return nil
	}
	body, err := a.get(ctx, a.CentralDirStart, a.CentralDirStart+a.CentralDirSize)
	if err != nil {
		return err
	}
	defer body.Close()
	cd := &centralReader{r: bufio.NewReaderSize(body, 64<<10), off: a.CentralDirStart}
	for i := 0; i < want; i++ {
		e, err := a.readCentralHeader(cd, i)
		if err != nil {
			return err
		}
		a.Entries = append(a.Entries, e)
	}
	if rest, _ := io.Copy(io.Discard, cd.r); rest != 0 || cd.off != a.CentralDirStart+a.CentralDirSize {
		a.endProblems = append(a.endProblems, fmt.Sprintf("central directory is %d bytes but its %d headers take %d", a.CentralDirSize, want, cd.off-a.CentralDirStart))
	}
	return nil
}

// centralReader reads the central directory. It holds the stream, the
// offset of the next header, and a buffer for the headers' variable parts.
type centralReader struct {
	r        *bufio.Reader
	off      int64
	fixed    [zipformat.CentralHeaderLen]byte
	variable []byte
}

// raw32 are a central header's 32-bit size and offset fields as written.
// Where one is the sentinel, the ZIP64 extra field gives the value.
type raw32 struct {
	csize, usize, offset uint32
}

func (r raw32) anySentinel() bool {
	return r.usize == zipformat.Uint32Max || r.csize == zipformat.Uint32Max || r.offset == zipformat.Uint32Max
}

// readCentralHeader reads central directory header i at cd.off and moves
// cd past it.
func (a *Archive) readCentralHeader(cd *centralReader, i int) (Entry, error) {
	off, want := cd.off, cap(a.Entries)
	if _, err := io.ReadFull(cd.r, cd.fixed[:]); err != nil {
		return Entry{}, a.cdReadErr(off, i, err)
	}
	b := readBuf(cd.fixed[:])
	if sig := b.u32(); sig != zipformat.CentralHeaderSignature {
		return Entry{}, a.formatErr(off, "central directory header %d of %d: signature 0x%08x, want 0x%08x", i+1, want, sig, zipformat.CentralHeaderSignature)
	}
	madeBy := b.u16()
	e := Entry{ReaderVersion: b.u16(), Flags: b.u16(), Method: b.u16()}
	clock, date := b.u16(), b.u16()
	e.CRC32 = b.u32()
	var raw raw32
	raw.csize, raw.usize = b.u32(), b.u32()
	nameLen, extraLen, commentLen := int(b.u16()), int(b.u16()), int(b.u16())
	disk := b.u16()
	b.u16() // internal attributes
	external := b.u32()
	raw.offset = b.u32()
	n := nameLen + extraLen + commentLen
	if cap(cd.variable) < n {
		cd.variable = make([]byte, n)
	}
	variable := cd.variable[:n]
	if _, err := io.ReadFull(cd.r, variable); err != nil {
		return Entry{}, a.cdReadErr(off, i, err)
	}
	e.Name = string(variable[:nameLen])
	e.CompressedSize, e.UncompressedSize, e.Offset = int64(raw.csize), int64(raw.usize), int64(raw.offset)
	e.Modified = zipformat.TimeFromMSDOS(date, clock)
	e.Mode = fileMode(madeBy, external, e.Name)
	zipErr, extraOK := centralExtras(&e, raw, variable[nameLen:nameLen+extraLen])
	if zipErr == "" && !e.Zip64 && raw.anySentinel() {
		zipErr = "a size or offset is 0xFFFFFFFF but there is no ZIP64 extra field"
	}
	if zipErr != "" {
		return Entry{}, a.formatErr(off, "central directory header %d (%q): %s", i+1, e.Name, zipErr)
	}
	if !extraOK {
		a.endProblems = append(a.endProblems, fmt.Sprintf("central directory header of %q: malformed extra field", e.Name))
	}
	if disk != 0 && disk != zipformat.Uint16Max {
		return Entry{}, a.formatErr(off, "central directory header %d (%q) is on disk %d; multi-disk archives are not supported", i+1, e.Name, disk)
	}
	cd.off += int64(zipformat.CentralHeaderLen + n)
	return e, nil
}

// centralExtras reads a central header's extra fields into e, which are the
// ZIP64 sizes and offset, the extended timestamp and the object metadata. It
// returns what is wrong with the ZIP64 field, "" when nothing, and whether
// the fields were well formed.
func centralExtras(e *Entry, raw raw32, extra []byte) (zipErr string, ok bool) {
	ok = extraFields(extra, func(id uint16, d readBuf) {
		switch id {
		case zipformat.Zip64ExtraID:
			e.Zip64 = true
			if msg := zip64Fields(e, raw, d); msg != "" {
				zipErr = msg
			}
		case zipformat.ExtTimeExtraID:
			if len(d) >= 5 && d.u8()&1 != 0 {
				e.Modified = time.Unix(int64(d.u32()), 0).UTC()
			}
		case zipformat.MetadataExtraID:
			e.MetaField = append([]byte{}, d...) // d is the reader's buffer
		}
	})
	return zipErr, ok
}

// zip64Fields sets e's sizes and offset from a ZIP64 extra field d. As
// APPNOTE 4.5.3 says, d holds only the fields whose 32-bit value is the
// sentinel, in this order.
// It returns what is wrong with d, "" when nothing.
func zip64Fields(e *Entry, raw raw32, d readBuf) string {
	for _, f := range []struct {
		is32 bool
		dst  *int64
		what string
	}{
		{raw.usize == zipformat.Uint32Max, &e.UncompressedSize, "uncompressed size"},
		{raw.csize == zipformat.Uint32Max, &e.CompressedSize, "compressed size"},
		{raw.offset == zipformat.Uint32Max, &e.Offset, "local header offset"},
	} {
		if !f.is32 {
			continue
		}
		if len(d) < 8 {
			return "its ZIP64 extra field lacks the " + f.what
		}
		v := d.u64()
		if v > 1<<63-1 {
			return fmt.Sprintf("its ZIP64 %s %d is out of range", f.what, v)
		}
		*f.dst = int64(v)
	}
	return ""
}

func (a *Archive) cdReadErr(off int64, i int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return a.formatErr(off, "central directory ends inside header %d of %d", i+1, cap(a.Entries))
	}
	return fmt.Errorf("read central directory of s3://%s/%s at offset %d: %w", a.Bucket, a.Key, off, err)
}
