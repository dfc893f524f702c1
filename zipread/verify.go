package zipread

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// VerifyOptions tune Verify; zero values take the defaults.
type VerifyOptions struct {
	Concurrency  int   // ranged GETs at once, DefaultConcurrency if zero
	ChunkSize    int64 // STORED entries above this are read in parallel chunks, DefaultChunkSize if zero
	CoalesceSize int64 // bytes of neighbouring entries per ranged GET, DefaultCoalesceSize if zero
}

// Problem is one thing wrong with an archive. In Report.Warnings it is one
// thing that 7-Zip, Info-ZIP and Go's archive/zip read correctly but that
// other readers, or get and extract, treat differently.
type Problem struct {
	Entry  string `json:"entry,omitempty"` // empty for the end records and the layout as a whole
	Offset int64  `json:"offset"`          // of the entry's local header, or of the record at fault
	What   string `json:"what"`
}

func (p Problem) String() string {
	if p.Entry == "" {
		return p.What
	}
	return fmt.Sprintf("entry %q: %s", p.Entry, p.What)
}

// Report is what Verify found.
type Report struct {
	Bucket       string        `json:"bucket"`
	Key          string        `json:"key"`
	Size         int64         `json:"size"`
	Entries      int           `json:"entries"`
	Files        int           `json:"files"`
	Dirs         int           `json:"dirs"`
	Deflated     int           `json:"deflated"`     // entries whose content was decompressed to check it
	Zip64        bool          `json:"zip64"`        // the end records include a ZIP64 end record
	Zip64Entries int           `json:"zip64Entries"` // central headers with a ZIP64 extra field
	Descriptors  int           `json:"descriptors"`  // entries with a data descriptor, flag bit 3, each checked
	BytesChecked int64         `json:"bytesChecked"` // entry data read and checked against CRC-32s
	Elapsed      time.Duration `json:"elapsedNanos"`
	Problems     []Problem     `json:"problems"`
	// Warnings are not problems. The archive is sound for 7-Zip, Info-ZIP
	// and Go's archive/zip, and verify exits 0 with only warnings.
	Warnings []Problem `json:"warnings"`
}

// OK reports whether Verify found no problem. Warnings do not count.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Verify reads the whole archive and checks it the way the strictest ZIP
// readers would. The end records agree with each other. Every local header
// agrees with its central directory header on name, flags, method, CRC-32,
// sizes and ZIP64 fields. Every data descriptor gives the central
// directory's CRC-32 and sizes. Entries and their descriptors follow each
// other without gaps or overlaps from the first byte to the central
// directory. Every entry's data has the CRC-32 the central directory gives,
// and deflated entries are decompressed to check it.
//
// s3zip never writes data descriptors, but streaming writers such as Python's
// zipfile, Info-ZIP zip, Go's archive/zip and Java do, so they are no
// problem. Verify returns an error only when S3 fails; everything wrong with
// the archive is a Problem in the report. What 7-Zip, Info-ZIP and Go read
// correctly is never a Problem but a Warning: bytes after the end record, "."
// name components and data descriptors with the right CRC-32 but wrong sizes.
func (a *Archive) Verify(ctx context.Context, opts VerifyOptions) (*Report, error) {
	start := time.Now()
	v := &verifier{a: a}
	r := &Report{Bucket: a.Bucket, Key: a.Key, Size: a.Size, Entries: len(a.Entries), Zip64: a.Zip64}
	v.checkEnd()
	v.checkCentral(r)

	s := newScan(a, v, opts.Concurrency, opts.ChunkSize, opts.CoalesceSize)
	v.localZip64 = make([]bool, len(a.Entries))
	v.descriptorLen = make([]int64, len(a.Entries))
	v.next = make([]int64, len(a.Entries))
	for k, i := range s.order {
		v.next[i] = a.CentralDirStart
		if k+1 < len(s.order) {
			v.next[i] = a.Entries[s.order[k+1]].Offset
		}
	}
	if err := s.run(ctx); err != nil {
		return nil, fmt.Errorf("verify s3://%s/%s: %w", a.Bucket, a.Key, err)
	}
	v.checkLayout(s)

	r.BytesChecked = s.dataBytes.Load()
	r.Problems, r.Warnings = byOffset(v.problems), byOffset(v.warnings)
	r.Elapsed = time.Since(start)
	return r, nil
}

// checkEnd records what Open found wrong with the end records, and warns of
// bytes after them.
func (v *verifier) checkEnd() {
	a := v.a
	for _, p := range a.endProblems {
		v.add(-1, a.CentralDirStart+a.CentralDirSize, "%s", p)
	}
	if a.Trailing > 0 {
		what := ""
		if a.TrailingZeros {
			what = "all zeros, as bsdtar pads an archive it writes to a pipe; "
		}
		v.warn(-1, a.Size-a.Trailing, "%d bytes after the end of central directory record belong to no record (%sInfo-ZIP and Go's archive/zip ignore them, 7-Zip warns of a \"Tail Size\")", a.Trailing, what)
	}
}

// checkCentral checks every central directory header on its own, before a
// byte of data is read, and counts what r reports of them.
func (v *verifier) checkCentral(r *Report) {
	a := v.a
	seen := make(map[string]int, len(a.Entries))
	written := make(map[string]int, len(a.Entries)) // by EntryPath
	for i := range a.Entries {
		e := &a.Entries[i]
		r.countEntry(e)
		if e.Zip64 && e.ReaderVersion&0xff < zipformat.VersionZip64 {
			v.add(i, e.Offset, "central header has a ZIP64 extra field but version needed %d < 45", e.ReaderVersion&0xff)
		}
		v.checkPath(i, written)
		if e.Flags&0x0800 != 0 && !utf8.ValidString(e.Name) {
			v.add(i, e.Offset, "name is flagged UTF-8 (bit 11) but is not valid UTF-8")
		}
		if e.Method == MethodStore && e.CompressedSize != e.UncompressedSize {
			v.add(i, e.Offset, "STORED but compressed size %d differs from uncompressed size %d", e.CompressedSize, e.UncompressedSize)
		}
		if j, dup := seen[e.Name]; dup {
			v.add(i, e.Offset, "duplicate name (also the entry at offset %d)", a.Entries[j].Offset)
		} else {
			seen[e.Name] = i
		}
	}
}

// countEntry counts e in the report's totals.
func (r *Report) countEntry(e *Entry) {
	if e.IsDir() {
		r.Dirs++
	} else {
		r.Files++
	}
	if e.Method == MethodDeflate {
		r.Deflated++
	}
	if e.Flags&zipformat.FlagDataDescriptor != 0 {
		r.Descriptors++
	}
	if e.Zip64 {
		r.Zip64Entries++
	}
}

// checkPath checks entry i's name as get and extract write it. written
// holds the entry each path was first written by.
func (v *verifier) checkPath(i int, written map[string]int) {
	e := &v.a.Entries[i]
	switch p, err := EntryPath(e.Name); {
	case err != nil:
		v.add(i, e.Offset, "name %s", err.(*UnsafeNameError).Why)
	case p == "":
		v.warn(i, e.Offset, "name is the directory extracted into (a \".\" component, which 7-Zip, Info-ZIP and Go's archive/zip read past); get and extract skip it")
	default:
		if p != e.Name {
			v.warn(i, e.Offset, "name has a \".\" component, which 7-Zip, Info-ZIP and Go's archive/zip read past; get and extract write it as %q", p)
		}
		if j, clash := written[p]; clash && v.a.Entries[j].Name != e.Name {
			v.warn(i, e.Offset, "name is %q without its \".\" components, as is entry %q's: get and extract refuse the archive", p, v.a.Entries[j].Name)
		} else if !clash {
			written[p] = i
		}
	}
}

// byOffset sorts ps by offset; none is an empty list, not null, in JSON.
func byOffset(ps []Problem) []Problem {
	sort.SliceStable(ps, func(x, y int) bool { return ps[x].Offset < ps[y].Offset })
	if ps == nil {
		return []Problem{}
	}
	return ps
}

type verifier struct {
	a        *Archive
	mu       sync.Mutex
	problems []Problem
	warnings []Problem
	// The slices below hold one value per entry.
	localZip64    []bool  // its local header has a ZIP64 extra field
	descriptorLen []int64 // length of its data descriptor, or -1 while not known to be sound
	next          []int64 // offset of the next local header or of the central directory
}

func (v *verifier) add(i int, off int64, format string, args ...any) {
	v.record(&v.problems, i, off, fmt.Sprintf(format, args...))
}

func (v *verifier) warn(i int, off int64, format string, args ...any) {
	v.record(&v.warnings, i, off, fmt.Sprintf(format, args...))
}

// record appends what was found about entry i, or about the archive as a
// whole when i is -1.
func (v *verifier) record(to *[]Problem, i int, off int64, what string) {
	p := Problem{Offset: off, What: what}
	if i >= 0 {
		p.Entry = v.a.Entries[i].Name
	}
	v.mu.Lock()
	*to = append(*to, p)
	v.mu.Unlock()
}

func (v *verifier) header(i int, h *localHeader, problem string) error {
	e := &v.a.Entries[i]
	if problem != "" {
		v.add(i, e.Offset, "%s", problem)
		return nil
	}
	v.localZip64[i] = h.zip64
	if (h.flags|e.Flags)&zipformat.FlagDataDescriptor != 0 {
		v.descriptorLen[i] = -1
	}
	for _, d := range compareLocal(e, h) {
		v.add(i, e.Offset, "%s", d)
	}
	return nil
}

func (v *verifier) descriptor(i int, end int64, b []byte) error {
	n, warning, problem := checkDescriptor(&v.a.Entries[i], b, v.next[i]-end, v.localZip64[i])
	if problem != "" {
		v.add(i, end, "%s", problem)
		return nil
	}
	if warning != "" {
		v.warn(i, end, "%s", warning)
	}
	v.descriptorLen[i] = int64(n)
	return nil
}

func (v *verifier) content(int, int64) (io.Writer, error) { return io.Discard, nil }

func (v *verifier) finished(i int, crc uint32, n int64) error {
	e := &v.a.Entries[i]
	if crc != e.CRC32 {
		v.add(i, e.Offset, "data has CRC-32 %08x, the central directory says %08x", crc, e.CRC32)
	}
	if n != e.UncompressedSize {
		v.add(i, e.Offset, "data decodes to %d bytes, the central directory says %d", n, e.UncompressedSize)
	}
	return nil
}

func (v *verifier) unread(i int, why string) error {
	v.add(i, v.a.Entries[i].Offset, "content not verified: %s", why)
	return nil
}

// checkLayout walks the entries in offset order. Each local header must start
// where the previous entry's data and data descriptor end, the first at 0,
// and the central directory right after the last. No entry is measured from
// an entry whose end is not known because its local header or descriptor is
// at fault, which is already a problem.
func (v *verifier) checkLayout(s *scan) {
	a := v.a
	expected, known := int64(0), true
	for _, i := range s.order {
		e := &a.Entries[i]
		if known {
			switch gap := e.Offset - expected; {
			case gap < 0:
				v.add(i, e.Offset, "local header at %d overlaps the previous entry, whose data ends at %d", e.Offset, expected)
			case gap > 0:
				v.add(i, e.Offset, "%d bytes from %d to %d, before this entry's local header, belong to no entry", gap, expected, e.Offset)
			}
		}
		known = s.dataStart[i] >= 0 && v.descriptorLen[i] >= 0
		if known {
			expected = s.dataStart[i] + e.CompressedSize + v.descriptorLen[i]
		}
	}
	if known {
		switch gap := a.CentralDirStart - expected; {
		case gap < 0:
			v.add(-1, a.CentralDirStart, "the last entry's data ends at %d, inside the central directory at %d", expected, a.CentralDirStart)
		case gap > 0:
			v.add(-1, expected, "%d bytes from %d to the central directory at %d belong to no entry", gap, expected, a.CentralDirStart)
		}
	}
}
