package plan

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// A plan of ten million entries decoded is gigabytes, about 800 bytes for a
// PlacedEntry and its Entry, more than the finalizer's memory. So the
// finalizer makes the central headers and the archive's CRC-32 an entry at
// a time as EachEntry reads the entries file, through DirectoryWriter. It
// holds the Layout, bounded by the 10,000 parts, the CRCs the workers
// computed at 4 bytes an entry, and the entries of its own final part.

// Layout is a plan without its entries, only its header and its parts.
type Layout struct {
	Header
	Parts []Part
}

// DecodeLayout reads a plan's header and part jobs, not its entries.
func DecodeLayout(header []byte, parts io.Reader) (*Layout, error) {
	l := &Layout{}
	if err := json.Unmarshal(header, &l.Header); err != nil {
		return nil, fmt.Errorf("plan header: %w", err)
	}
	if l.Version != FormatVersion {
		return nil, fmt.Errorf("plan header: version %d, this build reads %d", l.Version, FormatVersion)
	}
	jobs, err := DecodeParts(parts)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		l.Parts = append(l.Parts, j.Part)
		for _, c := range j.Carried {
			l.Parts = append(l.Parts, c.Part)
		}
	}
	l.Parts = append(append(l.Parts, l.Final.Part), l.DirectoryParts...)
	if len(l.Parts) != l.Header.Parts {
		return nil, fmt.Errorf("plan: %d parts, header says %d", len(l.Parts), l.Header.Parts)
	}
	return l, nil
}

// Split says whether the layout is a split plan's, as Plan.Split does.
func (l *Layout) Split() bool { return len(l.Archives) > 0 }

// WorkerParts are the parts workers build, as Plan.WorkerParts.
func (l *Layout) WorkerParts() []Part { return l.Parts[:firstFinal(l.Parts)] }

// FinalParts are the parts the finalizer builds, as Plan.FinalParts.
func (l *Layout) FinalParts() []Part { return l.Parts[firstFinal(l.Parts):] }

// FinalEntries is the index of the first entry the finalizer builds, in the
// first of finals, or entries, the plan's count, when it builds none.
func FinalEntries(finals []Part, entries int) EntryIndex {
	if finals[0].Count == 0 {
		return EntryIndex(entries)
	}
	return finals[0].First
}

// Archive returns archive k of a split layout as a layout of its own, its
// entries and parts numbered from 0 as Make and ArchivePlan number them.
// Its Stats are zero, since they are not known without its entries.
func (l *Layout) Archive(k int) *Layout {
	a := &l.Archives[k]
	v := &Layout{Header: Header{Version: l.Version, Strategy: a.Strategy, Size: a.Size, Entries: a.Entries,
		DirectoryOffset: a.DirectoryOffset, DirectorySize: a.DirectorySize, Zip64: a.Zip64}}
	v.Parts = archiveParts(l.Parts, l.Archives, k)
	v.Header.Parts = len(v.Parts)
	return v
}

// EntryReader reads placed entries from an entries file, one JSON line
// each, as it arrives, so the reader's memory is a line.
type EntryReader struct {
	sc   *bufio.Scanner
	line int
	read int64
}

// NewEntryReader reads entries from r.
func NewEntryReader(r io.Reader) *EntryReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	return &EntryReader{sc: sc}
}

// Next returns the next entry, the caller's to keep, or io.EOF after the last.
func (r *EntryReader) Next() (*PlacedEntry, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return nil, fmt.Errorf("read entries: %w", err)
		}
		return nil, io.EOF
	}
	r.line++
	r.read += int64(len(r.sc.Bytes())) + 1 // the line and the newline json.Encoder ends it with
	e := &PlacedEntry{}
	if err := json.Unmarshal(r.sc.Bytes(), e); err != nil {
		return nil, fmt.Errorf("entries line %d: %w", r.line, err)
	}
	if e.Entry == nil {
		return nil, fmt.Errorf("entries line %d: not an entry", r.line)
	}
	return e, nil
}

// Read is the bytes of the lines Next has read.
func (r *EntryReader) Read() int64 { return r.read }

// CRCs are CRC-32s by entry index, 4 bytes and a bit an entry. They are the
// finalizer's record of what the workers computed, 40 MB at ten million
// entries where a map of them would be gigabytes.
type CRCs struct {
	sums  []uint32
	known []uint64
}

// NewCRCs holds the CRC-32s of n entries, none known.
func NewCRCs(n int) *CRCs {
	return &CRCs{sums: make([]uint32, n), known: make([]uint64, (n+63)/64)}
}

// Len is the number of entries.
func (c *CRCs) Len() int { return len(c.sums) }

// Set records entry i's CRC-32; i must be below Len.
func (c *CRCs) Set(i EntryIndex, sum uint32) {
	c.sums[i] = sum
	c.known[i/64] |= 1 << (i % 64)
}

// Get returns entry i's CRC-32, known or not.
func (c *CRCs) Get(i EntryIndex) CRC {
	if i < 0 || int(i) >= len(c.sums) || c.known[i/64]&(1<<(i%64)) == 0 {
		return CRC{}
	}
	return KnownCRC(c.sums[i])
}

// DirectoryWriter writes an archive's central directory and end records an
// entry at a time, holding one header. On the way it takes the archive's
// CRC-32, making the local headers and combining the entries' CRC-32s for
// their data. Entries come in archive order, each with its CRC-32 known, and
// are checked as Validate checks a plan's; the directory is checked against
// the plan's size.
type DirectoryWriter struct {
	w      io.Writer
	layout DirectoryLayout
	next   EntryIndex // the index the next entry must have
	offset int64      // where the next entry must start
	data   uint32     // CRC-32 of the archive's bytes before offset
	dir    uint32     // CRC-32 of the directory written
	size   int64      // bytes of directory written
	ended  bool
	made   []byte
}

// DirectoryLayout is where an archive's central directory goes.
type DirectoryLayout struct {
	Entries         int
	DirectoryOffset int64
	DirectorySize   int64
	Size            int64 // the archive's size, which the directory and end records end
}

// DirectoryLayout returns where the plan's directory goes, for one archive.
func (p *Plan) DirectoryLayout() DirectoryLayout {
	return DirectoryLayout{len(p.Entries), p.DirectoryOffset, p.DirectorySize, p.Size}
}

// DirectoryLayout returns where the layout's directory goes, for one archive.
func (l *Layout) DirectoryLayout() DirectoryLayout {
	return DirectoryLayout{l.Entries, l.DirectoryOffset, l.DirectorySize, l.Size}
}

// NewDirectoryWriter writes the directory of an archive laid out as l to
// w. Its entries are numbered from 0, as Make and ArchivePlan number them.
func NewDirectoryWriter(w io.Writer, l DirectoryLayout) *DirectoryWriter {
	return &DirectoryWriter{w: w, layout: l, made: make([]byte, 0, 512)}
}

// Add writes entry e's central header.
func (d *DirectoryWriter) Add(e *PlacedEntry) error {
	var bad []string
	validatePlaced(func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }, e, d.next, d.offset)
	switch {
	case d.ended:
		return fmt.Errorf("internal error: entry %q after the end records", e.Name)
	case bad != nil:
		return &InvalidPlanError{bad}
	case !e.CRC32.Known:
		return &UnknownCRCError{e.Name}
	}
	d.data, d.made = advanceDataCRC(d.data, e, d.made)
	d.next, d.offset = d.next+1, e.End()
	return d.write(appendCentralHeader(d.made[:0], e, e.CRC32.Sum))
}

// End writes the end records after the last entry's header, and checks
// that the entries and the directory are the ones planned.
func (d *DirectoryWriter) End() error {
	l := d.layout
	if n := int(d.next); n != l.Entries || d.offset != l.DirectoryOffset || d.size != l.DirectorySize {
		return &InvalidPlanError{[]string{fmt.Sprintf("%d entries end at %d with a directory of %d bytes; the plan has %d entries, a directory at %d of %d bytes",
			n, d.offset, d.size, l.Entries, l.DirectoryOffset, l.DirectorySize)}}
	}
	if err := d.write(zipformat.AppendEndRecords(d.made[:0], l.Entries, l.DirectoryOffset, l.DirectorySize)); err != nil {
		return err
	}
	d.ended = true
	if d.size != l.Size-l.DirectoryOffset {
		return fmt.Errorf("internal error: directory and end records are %d bytes, planned %d", d.size, l.Size-l.DirectoryOffset)
	}
	return nil
}

// ArchiveCRC returns the CRC-32 of the whole archive, once End has written
// the end records.
func (d *DirectoryWriter) ArchiveCRC() (uint32, error) {
	if !d.ended {
		return 0, fmt.Errorf("internal error: the archive's CRC-32 asked before its directory ended")
	}
	return zipformat.CombineCRC(d.data, d.dir, d.size), nil
}

func (d *DirectoryWriter) write(b []byte) error {
	if _, err := d.w.Write(b); err != nil {
		return fmt.Errorf("central directory: %w", err)
	}
	d.dir = crc32.Update(d.dir, crc32.IEEETable, b)
	d.size += int64(len(b))
	return nil
}

// advanceDataCRC advances crc, the CRC-32 of the archive before entry e,
// over e's local header and data. It makes the header in scratch and
// returns scratch for reuse. e's CRC-32 must be known.
func advanceDataCRC(crc uint32, e *PlacedEntry, scratch []byte) (uint32, []byte) {
	scratch = AppendLocalHeader(scratch[:0], e, e.CRC32.Sum)
	crc = crc32.Update(crc, crc32.IEEETable, scratch)
	return zipformat.CombineCRC(crc, e.CRC32.Sum, e.Size), scratch
}
