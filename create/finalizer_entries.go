package create

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/s3zip/s3zip/plan"
)

// The finalizer never holds the plan's entries, which at ten million are
// gigabytes decoded. It reads the entries file once, an entry at a time,
// and spools to $TMPDIR what it needs of each afterwards, the central
// header in a directorySpool and the report's line in reportLines. It holds
// the layout, the workers' CRC-32s in a plan.CRCs at 4 bytes an entry, and
// the entries of its own final part.

// archiveRun says where one archive's entries are, in the entries file and
// in the plan.
type archiveRun struct {
	layout *plan.Layout    // the archive's, its entries numbered from 0
	job    *Job            // the job as Job.forArchive makes it for the archive's upload
	first  plan.EntryIndex // its first entry's index in the plan
	from   int64           // where its first line starts in the entries file
	number int             // its number in a split run, 1 for name-0001.zip, or 0 for one archive
	last   bool            // the file ends with its entries
}

// streamEntries reads an archive's entries from the run's entries file with
// one GET from its first line. It gives each entry the CRC-32 a worker
// computed, spools its central header and adds its line to the report; a
// final part's entries get their lines from finalLines once their CRC-32s
// are known. It returns the directory and where the next archive's entries
// start.
func (fr *finalRun) streamEntries(ctx context.Context, c S3, run archiveRun) (*directorySpool, int64, error) {
	job := fr.job
	body, err := openObjectFrom(ctx, c, job.WorkBucket, job.EntriesKey, run.from)
	if err != nil {
		return nil, 0, fmt.Errorf("plan entries: %w", err)
	}
	defer body.Close()
	dir, err := newDirectorySpool(run.layout.DirectoryLayout(), run.layout.FinalParts())
	if err != nil {
		return nil, 0, err
	}
	entries := plan.NewEntryReader(body)
	if err := spoolEntries(entries, run, dir, fr.crcs, fr.lines); err != nil {
		dir.discard()
		return nil, 0, fmt.Errorf("plan entries s3://%s/%s: %w", job.WorkBucket, job.EntriesKey, err)
	}
	return dir, run.from + entries.Read(), nil
}

// spoolEntries does the work of streamEntries once the entries are open.
func spoolEntries(entries *plan.EntryReader, run archiveRun, dir *directorySpool, crcs *plan.CRCs, lines *reportLines) error {
	for i := range run.layout.Entries {
		e, err := entries.Next()
		if err == io.EOF {
			return fmt.Errorf("the file ends at entry %d, the plan has %d", int(run.first)+i, int(run.first)+run.layout.Entries)
		}
		if err != nil {
			return err
		}
		if err := takeCRC(e, crcs.Get(e.Index)); err != nil {
			return err
		}
		e.Index -= run.first
		kept, err := dir.add(e)
		if err != nil {
			return err
		}
		if !kept {
			if err := lines.add(e, run.number); err != nil {
				return err
			}
		}
	}
	if run.last {
		if _, err := entries.Next(); err != io.EOF {
			return fmt.Errorf("more entries than the plan's %d (%v)", int(run.first)+run.layout.Entries, err)
		}
	}
	return nil
}

// recordCRC takes into crcs the CRC-32 part's worker computed of an entry,
// given as the batch wrote the entry's index and CRC-32.
func recordCRC(crcs *plan.CRCs, part int, entry, crc string) error {
	i, err := strconv.Atoi(entry)
	if err != nil || i < 0 || i >= crcs.Len() {
		return fmt.Errorf("part %d reports a CRC for entry %q, which is not in the plan", part, entry)
	}
	sum, err := plan.ParseHexCRC(crc)
	if err != nil {
		return fmt.Errorf("part %d, entry %d: %w", part, i, err)
	}
	crcs.Set(plan.EntryIndex(i), sum)
	return nil
}

// takeCRC gives e the CRC-32 a worker computed of it, if any, which must be
// the plan's when the plan knows one.
func takeCRC(e *plan.PlacedEntry, computed plan.CRC) error {
	if !computed.Known {
		return nil
	}
	if e.CRC32.Known && e.CRC32.Sum != computed.Sum {
		return failure.Checksum("entry %q: a worker computed CRC-32 %08x, the plan has %08x", e.Name, computed.Sum, e.CRC32.Sum)
	}
	e.CRC32 = computed
	return nil
}

// directorySpool is an archive's central directory and end records, written
// to $TMPDIR by a plan.DirectoryWriter as the entries go by and read back by
// the final parts, since at ten million entries it is about a gigabyte. The
// entries of the first final part, from finalFirst on, are held until
// building that part learns their CRC-32s.
type directorySpool struct {
	file       *os.File
	out        *bufio.Writer
	dir        *plan.DirectoryWriter
	offset     int64 // the directory's offset in the archive
	finals     []plan.Part
	finalFirst plan.EntryIndex
	final      []plan.PlacedEntry
	ended      bool
}

// newDirectorySpool creates the spool of a directory laid out as l, whose
// final parts are finals, in $TMPDIR.
func newDirectorySpool(l plan.DirectoryLayout, finals []plan.Part) (*directorySpool, error) {
	file, err := os.CreateTemp("", "s3zip-directory-*")
	if err != nil {
		return nil, fmt.Errorf("central directory file: %w (the finalizer writes it to $TMPDIR, /tmp on Lambda)", err)
	}
	s := &directorySpool{file: file, out: bufio.NewWriterSize(file, 1<<20), offset: l.DirectoryOffset, finals: finals, finalFirst: plan.FinalEntries(finals, l.Entries)}
	s.dir = plan.NewDirectoryWriter(s.out, l)
	return s, nil
}

// add writes e's central header, or keeps e and reports kept when e is among
// the final part's entries.
func (s *directorySpool) add(e *plan.PlacedEntry) (kept bool, err error) {
	if e.Index >= s.finalFirst {
		s.final = append(s.final, *e)
		return true, nil
	}
	return false, s.tmpError(s.dir.Add(e))
}

// end writes the final part's entries' headers, each with the CRC-32
// building the part computed when it did, and the end records, and turns
// to reading the directory from its start. Only the first call does.
func (s *directorySpool) end(computed map[plan.EntryIndex]uint32) error {
	if s.ended {
		return nil
	}
	for i := range s.final {
		e := &s.final[i]
		if v, ok := computed[e.Index]; ok {
			e.CRC32 = plan.KnownCRC(v)
		}
		if err := s.dir.Add(e); err != nil {
			return s.tmpError(err)
		}
	}
	if err := s.dir.End(); err != nil {
		return s.tmpError(err)
	}
	if err := s.out.Flush(); err != nil {
		return s.tmpError(err)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return s.tmpError(err)
	}
	s.ended = true
	return nil
}

// finalLines adds the final part's entries' lines to the report once
// sending the final parts has learned their CRC-32s. number is the
// archive's number in a split run.
func (s *directorySpool) finalLines(lines *reportLines, number int) error {
	for i := range s.final {
		if err := lines.add(&s.final[i], number); err != nil {
			return err
		}
	}
	return nil
}

// Read reads the directory, once end has made it.
func (s *directorySpool) Read(b []byte) (int, error) {
	if !s.ended {
		return 0, fmt.Errorf("internal error: the central directory read before its end")
	}
	return s.file.Read(b)
}

// archiveCRC returns the archive's CRC-32, once end has made the directory.
func (s *directorySpool) archiveCRC() (uint32, error) { return s.dir.ArchiveCRC() }

// tmpError says where a failed write went. An error of the plan's passes
// unchanged.
func (s *directorySpool) tmpError(err error) error {
	var pathErr *os.PathError
	if err == nil || !errors.As(err, &pathErr) {
		return err
	}
	return fmt.Errorf("write the central directory to %s: %w (the finalizer's /tmp must hold it: infra/README.md)", s.file.Name(), err)
}

// discard removes the spool's file.
func (s *directorySpool) discard() {
	if s != nil {
		discardSpool(s.file)
	}
}

// reportLines are a report's entries, spooled to $TMPDIR as they are met,
// since at ten million entries they are gigabytes. Each is written as
// json.MarshalIndent writes it inside the Report, with the comma and indent
// before it.
type reportLines struct {
	file   *os.File
	out    *bufio.Writer // keeps its first error, which Flush returns
	n      int
	failed error // an entry's line not made, so the report is not put
}

// newReportLines creates the lines' file in $TMPDIR.
func newReportLines() (*reportLines, error) {
	file, err := os.CreateTemp("", "s3zip-report-*.json")
	if err != nil {
		return nil, fmt.Errorf("report file: %w (the finalizer writes it to $TMPDIR, /tmp on Lambda)", err)
	}
	return &reportLines{file: file, out: bufio.NewWriterSize(file, 1<<20)}, nil
}

// fail records that the report cannot be made whole, which document says.
func (l *reportLines) fail(err error) {
	if l.failed == nil {
		l.failed = err
	}
}

// add writes e's line. archive is its archive's number in a split run.
func (l *reportLines) add(e *plan.PlacedEntry, archive int) error {
	line, err := json.MarshalIndent(reportEntry(e, archive), "    ", "  ")
	if err != nil {
		return fmt.Errorf("report entry %q: %w", e.Name, err)
	}
	sep := ",\n    "
	if l.n == 0 {
		sep = "\n    "
	}
	l.out.WriteString(sep)
	l.out.Write(line)
	l.n++
	return nil
}

// document returns r with the lines as its entries, read from the lines'
// file, and its size. It is byte for byte what json.MarshalIndent writes of
// r with the lines in r.Entries and a two-space indent.
func (l *reportLines) document(r *Report) (*spooledDoc, int64, error) {
	if l.failed != nil {
		return nil, 0, l.failed
	}
	if err := l.out.Flush(); err != nil {
		return nil, 0, fmt.Errorf("write the report to %s: %w (the finalizer's /tmp must hold it: infra/README.md)", l.file.Name(), err)
	}
	size, err := l.file.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, fmt.Errorf("report file %s: %w", l.file.Name(), err)
	}
	// Entries is the document's last field, so the rest, with no entries,
	// ends in "[]\n}", where the entries go.
	r.Entries = []ReportEntry{}
	head, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, 0, fmt.Errorf("report: %w", err)
	}
	tail := []byte(nil)
	if l.n > 0 {
		head, tail = head[:len(head)-len("]\n}")], []byte("\n  ]\n}")
	}
	doc := joinedAt{{bytes.NewReader(head), int64(len(head))}, {l.file, size}, {bytes.NewReader(tail), int64(len(tail))}}
	total := int64(len(head)) + size + int64(len(tail))
	return &spooledDoc{io.NewSectionReader(doc, 0, total), l.file}, total, nil
}

// discard removes the lines' file.
func (l *reportLines) discard() {
	if l != nil {
		discardSpool(l.file)
	}
}

// reportEntry returns e's line of the report. archive is its archive's
// number in a split run, or 0 for one archive.
func reportEntry(e *plan.PlacedEntry, archive int) ReportEntry {
	src := ""
	if e.Source.Key != "" {
		src = "s3://" + e.Source.Bucket + "/" + e.Source.Key
	}
	r := ReportEntry{Name: e.Name, Source: src, Size: e.Size, CRC32: e.CRC32.String(), Offset: e.Offset, SHA256: e.SHA256, Archive: archive}
	if e.Method == plan.MethodDeflate {
		o := e.Origin
		r.Source = "s3://" + o.Bucket + "/" + o.Key
		r.Size, r.CRC32, r.Compressed = e.RawSize, e.RawCRC32.String(), e.Size
	}
	return r
}

// spooledDoc is a document put from a file in $TMPDIR with bytes before
// and after it, read as one.
type spooledDoc struct {
	*io.SectionReader
	file *os.File
}

// Name returns the spooled file's name.
func (d *spooledDoc) Name() string { return d.file.Name() }

// joinedAt reads its pieces one after another as one io.ReaderAt.
type joinedAt []struct {
	r    io.ReaderAt
	size int64
}

func (j joinedAt) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for _, p := range j {
		if len(b) == 0 {
			return n, nil
		}
		if off >= p.size {
			off -= p.size
			continue
		}
		want := min(int64(len(b)), p.size-off)
		k, err := p.r.ReadAt(b[:want], off)
		n += k
		if int64(k) < want {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // the piece is shorter than it was
			}
			return n, err
		}
		b, off = b[k:], 0
	}
	if len(b) > 0 {
		return n, io.EOF
	}
	return n, nil
}
