package extract

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
	"github.com/s3zip/s3zip/zipread"
)

// S3 limits the plan keeps to.
const (
	MaxCopyPart = s3part.MaxPartSize // largest UploadPartCopy range
	MinPart     = s3part.MinPartSize // smallest part but the last
	MaxParts    = s3part.MaxParts
)

// ReportName is the report object written beside the extracted objects.
const ReportName = ".s3zip-extract-report.json"

// Kind is how a job writes its objects.
type Kind string

const (
	// KindCopy writes one STORED entry by a multipart upload of ranged UploadPartCopy parts.
	KindCopy Kind = "copy"
	// KindRead makes one ranged GET of neighbouring entries. Each is inflated
	// or taken as is, its CRC-32 checked, and written with PutObject, or with
	// a multipart upload when large.
	KindRead Kind = "read"
)

// Options are the choices a request makes.
type Options struct {
	// SkipUnsupported skips entries with compression methods other than
	// STORED and DEFLATE, or encrypted, instead of refusing the archive.
	SkipUnsupported bool
	// SmallStored is the size below which a STORED entry is read and put by
	// a worker instead of copied server-side. A copy costs a header GET and
	// three requests to create, copy and complete; a put costs one plus a
	// share of a grouped GET and the bytes twice over the worker's link. 0 lets
	// plan.Model.StoredReadBelow choose; negative copies every STORED entry.
	SmallStored int64
	// Model is the profile of where the extraction runs, for SmallStored's
	// choice; nil is AWS's plan.DefaultModel.
	Model *plan.Model `json:"-"`
	// ReadGroup is how many bytes one grouped ranged GET spans at most.
	ReadGroup int64
	// CopyPart is the size of the ranges a STORED entry over MaxCopyPart is
	// copied in; it defaults to MaxCopyPart.
	CopyPart int64
	// ContentTypes chooses each object's Content-Type from the request's
	// overrides by extension, then what the archive kept, then the fixed table.
	ContentTypes objmeta.ContentTypes
}

// DefaultReadGroup is Options.ReadGroup's default.
const DefaultReadGroup = 8 << 20

// ReadBelow returns the size below which a STORED entry is read and put
// rather than copied. It is SmallStored when set, else the model's choice
// for grouped GETs of ReadGroup bytes; 0 copies every STORED entry.
func (o Options) ReadBelow() int64 {
	switch {
	case o.SmallStored < 0:
		return 0
	case o.SmallStored > 0:
		return o.SmallStored
	}
	m := plan.DefaultModel
	if o.Model != nil {
		m = *o.Model
	}
	group := o.ReadGroup
	if group <= 0 {
		group = DefaultReadGroup
	}
	return m.StoredReadBelow(group)
}

// Item is one entry to write as an object.
type Item struct {
	Entry  int    `json:"entry"` // index in the central directory
	Name   string `json:"name"`
	Key    string `json:"key"`
	Method uint16 `json:"method"`
	// Offset is the entry's local header. Bound is where the next entry or
	// the central directory starts, by which its header and data must end.
	Offset int64 `json:"offset"`
	Bound  int64 `json:"bound"`
	// DataStart is where the data starts, read from the local header. It is
	// known at planning for copies; a read job finds it in the bytes it reads.
	DataStart      int64     `json:"dataStart"`
	CompressedSize int64     `json:"compressedSize"`
	Size           int64     `json:"size"`
	CRC32          uint32    `json:"crc32"`
	Modified       time.Time `json:"modified"`
	ContentType    string    `json:"contentType,omitempty"`
	// Meta is what `create --keep-metadata` kept of the object the entry was
	// made from, written back with it.
	Meta *zipformat.Metadata `json:"meta,omitempty"`
	// Replaces says an object was at Key when an --overwrite run was planned.
	// It is replaced by the entry's complete content in one write and never
	// deleted, not even when the run fails, so the key holds the old bytes or
	// the new ones. Every other key is written with If-None-Match, only if
	// still free, so Abort may delete what it wrote there.
	Replaces bool `json:"replaces,omitempty"`
}

// Range is [Start, End) of the archive.
type Range struct{ Start, End int64 }

// Job is a unit of work for one worker.
type Job struct {
	Index int    `json:"index"` // in the plan's job list
	Kind  Kind   `json:"kind"`
	Items []Item `json:"items"`
	// Ranges are, for a copy, the archive ranges that become parts 1..n,
	// and for a read, the one range read, covering every item's data.
	Ranges []Range `json:"ranges"`
}

// Bytes is how many bytes of the archive the job reads or copies.
func (j *Job) Bytes() int64 {
	var n int64
	for _, r := range j.Ranges {
		n += r.End - r.Start
	}
	return n
}

// Writes returns how many PUT, COPY and POST requests the job makes to the
// destination, which S3 counts against the prefix's write rate. A read
// makes a PutObject for each object; a copy makes CreateMultipartUpload,
// an UploadPartCopy a range and CompleteMultipartUpload.
func (j *Job) Writes() int {
	if j.Kind == KindCopy {
		return 2 + len(j.Ranges)
	}
	return len(j.Items)
}

// Skipped is an entry left out, and why.
type Skipped struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Plan is the jobs that extract an archive.
type Plan struct {
	Jobs    []Job     `json:"jobs"`
	Skipped []Skipped `json:"skipped,omitempty"`
	Objects int       `json:"objects"`
	Bytes   int64     `json:"bytes"`  // of the extracted objects
	Copied  int64     `json:"copied"` // archive bytes copied server-side
	Read    int64     `json:"read"`   // archive bytes read by workers
	// ReadBelow is the size below which STORED entries were read rather
	// than copied, from Options.ReadBelow.
	ReadBelow int64 `json:"readBelow"`
	// ReadAll says the archive is no bigger than S3's smallest part. S3
	// copies no range of such an object, so every entry is read.
	ReadAll bool `json:"readAll,omitempty"`
}

// EntriesRefusedError lists the entries that stop an archive from being extracted.
// Nothing has been written when it is returned.
type EntriesRefusedError struct {
	Archive string
	Entries []Skipped
	// Fix says what to do; when empty, the hint for unsafe and unsupported entries applies.
	Fix string
}

func (e *EntriesRefusedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s cannot be extracted: %d entries refused", e.Archive, len(e.Entries))
	for i, s := range e.Entries {
		if i == 20 {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Entries)-20)
			break
		}
		fmt.Fprintf(&b, "\n  %q %s", s.Name, s.Why)
	}
	fix := e.Fix
	if fix == "" {
		fix = "unsafe names are always refused; unsupported compression methods and encryption can be skipped with --skip-unsupported"
	}
	b.WriteString("\n(" + fix + ")")
	return b.String()
}

// Checked is what Check keeps of an archive's entries, and what it leaves out.
type Checked struct {
	Keep    []int // the entries to extract, by index in the central directory
	Skipped []Skipped
}

// Check validates the central directory before anything is read beyond it.
// It checks names, methods, encryption, and that every entry's local header
// and data lie before the central directory without overlapping another
// entry, judged from the central directory's sizes; PlanJobs checks again
// with the real data starts. It returns the entries to extract, without
// directories and skipped entries, and those skipped.
func Check(a *zipread.Archive, prefix string, opts Options) (*Checked, error) {
	var keep []int
	var refused, skipped []Skipped
	type taken struct{ key, what string }
	keys := map[string]taken{norm.NFC.String(prefix + ReportName): {prefix + ReportName, "the extraction report"}}
	for i := range a.Entries {
		e := &a.Entries[i]
		name, why := entryName(e.Name)
		if why != "" {
			refused = append(refused, Skipped{e.Name, why})
			continue
		}
		if why := notAFile(e); why != "" {
			skipped = append(skipped, Skipped{e.Name, why})
			continue
		}
		if _, err := e.Metadata(); err != nil {
			refused = append(refused, Skipped{e.Name, err.Error()})
			continue
		}
		if n := len(e.MetaField); n > objmeta.MaxFieldBytes {
			refused = append(refused, Skipped{e.Name, fmt.Sprintf("its metadata extra field 0x%04x is %d bytes, more than the %d s3zip writes (S3's headers stay under 8 KiB)", zipformat.MetadataExtraID, n, objmeta.MaxFieldBytes)})
			continue
		}
		if why := unsupported(e); why != "" {
			if opts.SkipUnsupported {
				skipped = append(skipped, Skipped{e.Name, why})
			} else {
				refused = append(refused, Skipped{e.Name, why})
			}
			continue
		}
		if e.IsDir() {
			continue // S3 has no folder to make
		}
		// Names equal after Unicode NFC normalisation, such as é as one code
		// point or as e + combining accent, are the same file to most file
		// systems and people, so they are refused like exact duplicates.
		key := prefix + name
		nk := norm.NFC.String(key)
		if other, dup := keys[nk]; dup {
			if other.key == key {
				refused = append(refused, Skipped{e.Name, fmt.Sprintf("would be written to the same key %q as %s", key, other.what)})
			} else {
				refused = append(refused, Skipped{e.Name, fmt.Sprintf("collides with %s after Unicode NFC normalisation (both are %q)", other.what, nk)})
			}
			continue
		}
		keys[nk] = taken{key, fmt.Sprintf("entry %q", e.Name)}
		keep = append(keep, i)
	}
	refused = append(refused, layoutProblems(a, nil)...)
	if len(refused) > 0 {
		return nil, &EntriesRefusedError{Archive: a.String(), Entries: refused}
	}
	return &Checked{Keep: keep, Skipped: skipped}, nil
}

// Reserved lists the entries kept by Check whose keys an extraction into
// s3://destBucket/prefix must never write, each with why. Replacing the
// archive being read breaks the run, and a failed run's clean-up would then
// delete it. Keys under workPrefix in any bucket are s3zip's own, where
// work objects live and cleanup deletes.
func Reserved(a *zipread.Archive, destBucket, prefix, workPrefix string, keep []int) []Skipped {
	var out []Skipped
	check := func(name, key string) {
		switch {
		case destBucket == a.Bucket && key == a.Key:
			out = append(out, Skipped{name, fmt.Sprintf("would be written to s3://%s/%s, the archive being extracted", destBucket, key)})
		case strings.HasPrefix(key, workPrefix):
			out = append(out, Skipped{name, fmt.Sprintf("would be written to s3://%s/%s, under the work prefix %s that s3zip keeps for its work objects and cleanup deletes", destBucket, key, workPrefix)})
		}
	}
	check(ReportName, prefix+ReportName)
	for _, i := range keep {
		check(a.Entries[i].Name, prefix+a.Entries[i].Name)
	}
	return out
}

// layoutProblems lists entries whose local header and data, sized from the
// central directory or from dataStart when known, do not lie before the
// central directory or overlap the next entry. Such are a "zip bomb" layout
// that makes many entries of the same bytes, or a directory that points
// outside the file.
func layoutProblems(a *zipread.Archive, dataStart map[int]int64) []Skipped {
	order := make([]int, len(a.Entries))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return a.Entries[order[x]].Offset < a.Entries[order[y]].Offset })
	var out []Skipped
	for k, i := range order {
		e := &a.Entries[i]
		start := e.Offset + 30 + int64(len(e.Name))
		if ds, ok := dataStart[i]; ok {
			start = ds
		}
		end := start + e.CompressedSize
		switch {
		case e.Offset < 0 || e.CompressedSize < 0 || e.UncompressedSize < 0:
			out = append(out, Skipped{e.Name, "has a negative offset or size"})
		case end > a.CentralDirStart || end < start:
			out = append(out, Skipped{e.Name, fmt.Sprintf("has data from %d to %d, past the end of the entries at %d (central directory points outside the data)", start, end, a.CentralDirStart)})
		case k+1 < len(order) && end > a.Entries[order[k+1]].Offset:
			next := &a.Entries[order[k+1]]
			out = append(out, Skipped{e.Name, fmt.Sprintf("has data from %d to %d overlapping entry %q at %d (overlapping entries: a zip bomb layout)", start, end, next.Name, next.Offset)})
		}
	}
	return out
}

// entryName returns the name an entry is written under below the prefix,
// without "." components as zipread.EntryPath gives it, or why it cannot
// become a key.
func entryName(name string) (string, string) {
	if !utf8.ValidString(name) {
		return "", "is not valid UTF-8"
	}
	p, err := zipread.EntryPath(name)
	if err != nil {
		if ue, ok := err.(*zipread.UnsafeNameError); ok {
			return "", ue.Why
		}
		return "", err.Error()
	}
	if len(p) > 1024-64 {
		return "", fmt.Sprintf("is %d bytes long; S3 keys are at most 1024 bytes with the prefix", len(p))
	}
	return p, ""
}

// notAFile says why an entry that is not a regular file or an empty
// directory cannot become an object, or returns "". A symbolic link's data
// holds its target, and a directory's data or an empty device's has no file
// to go into. Such entries are skipped and listed, never written. A device,
// pipe or socket entry that holds data is the content read through it, as
// Info-ZIP's `zip - <file` records standard input with the pipe's mode, and
// is extracted as a file, as Info-ZIP's unzip does.
func notAFile(e *zipread.Entry) string {
	m := e.Mode
	special := ""
	switch {
	case m&fs.ModeSymlink != 0:
		return "is a symbolic link (S3 has no links; its data is the link's target, not a file's content)"
	case e.IsDir() && e.UncompressedSize != 0:
		return fmt.Sprintf("is a directory entry with %d bytes of data (a directory has no content to write)", e.UncompressedSize)
	case m.IsDir() && !e.IsDir():
		return "is a directory (its mode says so) without the trailing / of a directory's name"
	case m&fs.ModeCharDevice != 0:
		special = "a character device file"
	case m&fs.ModeDevice != 0:
		special = "a block device file"
	case m&fs.ModeNamedPipe != 0:
		special = "a named pipe"
	case m&fs.ModeSocket != 0:
		special = "a socket"
	}
	if special != "" && e.UncompressedSize == 0 {
		return "is " + special + " with no data (not a file with content)"
	}
	return ""
}

func unsupported(e *zipread.Entry) string {
	switch {
	case e.Flags&0x1 != 0:
		return "is encrypted"
	case e.Method != zipread.MethodStore && e.Method != zipread.MethodDeflate:
		return fmt.Sprintf("uses compression method %d (%s), not STORED (0) or DEFLATE (8)", e.Method, methodName(e.Method))
	}
	return ""
}

func methodName(m uint16) string {
	switch m {
	case 12:
		return "bzip2"
	case 14:
		return "LZMA"
	case 93:
		return "Zstandard"
	case 95:
		return "XZ"
	case 9:
		return "Deflate64"
	case 98:
		return "PPMd"
	case 99:
		return "AES encryption"
	}
	return "unknown"
}

// Copies returns the entries kept by Check that PlanJobs copies server-side,
// whose data starts must be read from their local headers before planning.
// The read jobs read the others' headers in the bytes they read anyway.
func Copies(a *zipread.Archive, keep []int, opts Options) []int {
	small := opts.ReadBelow()
	var out []int
	for _, i := range keep {
		if e := &a.Entries[i]; copied(a, e, small) {
			out = append(out, i)
		}
	}
	return out
}

// copied says whether an entry is copied server-side, being STORED, not
// small, and in an archive over 5 MiB, the smallest S3 copies ranges of as
// partwork.CopyRange says; the entries of a smaller one are read.
func copied(a *zipread.Archive, e *zipread.Entry, small int64) bool {
	return e.Method == zipread.MethodStore && e.CompressedSize > 0 && e.CompressedSize >= small && a.Size > s3part.MinPartSize
}

// PlanJobs turns the entries Check kept into jobs; dataStart holds where
// the data of the entries named by Copies starts, from their local headers.
func PlanJobs(a *zipread.Archive, prefix string, c *Checked, dataStart map[int]int64, opts Options) (*Plan, error) {
	if probs := layoutProblems(a, dataStart); len(probs) > 0 {
		return nil, &EntriesRefusedError{Archive: a.String(), Entries: probs}
	}
	small := opts.ReadBelow()
	group := opts.ReadGroup
	if group <= 0 {
		group = DefaultReadGroup
	}
	copyPart := opts.CopyPart
	if copyPart < MinPart || copyPart > MaxCopyPart {
		copyPart = MaxCopyPart
	}
	p := &Plan{Skipped: c.Skipped, ReadBelow: small, ReadAll: a.Size <= s3part.MinPartSize}
	order := append([]int(nil), c.Keep...)
	sort.SliceStable(order, func(x, y int) bool { return a.Entries[order[x]].Offset < a.Entries[order[y]].Offset })
	bound := bounds(a)
	var cur *Job
	flush := func() {
		if cur != nil {
			p.Jobs = append(p.Jobs, *cur)
			p.Read += cur.Bytes()
			cur = nil
		}
	}
	for _, i := range order {
		e := &a.Entries[i]
		name, _ := entryName(e.Name) // Check refused those without one
		meta, _ := e.Metadata()      // Check refused those it could not read
		it := Item{
			Entry: i, Name: e.Name, Key: prefix + name, Method: e.Method,
			Offset: e.Offset, Bound: bound[i], DataStart: -1, CompressedSize: e.CompressedSize, Size: e.UncompressedSize,
			CRC32: e.CRC32, Modified: e.Modified, Meta: meta, ContentType: opts.ContentTypes.For(e.Name, kept(meta)),
		}
		p.Objects++
		p.Bytes += it.Size
		if e.Method == zipread.MethodStore && e.CompressedSize != e.UncompressedSize {
			return nil, &EntriesRefusedError{Archive: a.String(), Entries: []Skipped{{e.Name, fmt.Sprintf("is STORED but its sizes differ (%d compressed, %d uncompressed)", e.CompressedSize, e.UncompressedSize)}}}
		}
		if copied(a, e, small) {
			ds, ok := dataStart[i]
			if !ok {
				return nil, fmt.Errorf("entry %q: where its data starts was not read before planning its copy", e.Name)
			}
			it.DataStart = ds
			flush()
			j := Job{Kind: KindCopy, Items: []Item{it}, Ranges: copyRanges(it.DataStart, it.CompressedSize, copyPart)}
			if len(j.Ranges) > MaxParts {
				return nil, fmt.Errorf("entry %q: %d bytes need %d copy parts, more than S3's %d", e.Name, e.CompressedSize, len(j.Ranges), MaxParts)
			}
			p.Copied += it.CompressedSize
			p.Jobs = append(p.Jobs, j)
			continue
		}
		// A read job reads each entry from its local header to the next
		// entry, so the header's real length is learnt from the bytes read.
		end := it.Bound
		if cur != nil && end-cur.Ranges[0].Start <= group {
			cur.Items = append(cur.Items, it)
			cur.Ranges[0].End = end
			continue
		}
		flush()
		cur = &Job{Kind: KindRead, Items: []Item{it}, Ranges: []Range{{it.Offset, end}}}
	}
	flush()
	// Largest first, so the long jobs start early.
	sort.SliceStable(p.Jobs, func(x, y int) bool { return p.Jobs[x].Bytes() > p.Jobs[y].Bytes() })
	return p, nil
}

// bounds returns, per entry, where the next entry by offset or the central
// directory starts.
func bounds(a *zipread.Archive) []int64 {
	order := make([]int, len(a.Entries))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return a.Entries[order[x]].Offset < a.Entries[order[y]].Offset })
	out := make([]int64, len(a.Entries))
	for k, i := range order {
		out[i] = a.CentralDirStart
		if k+1 < len(order) {
			out[i] = a.Entries[order[k+1]].Offset
		}
	}
	return out
}

// copyRanges cuts [start, start+n) into copy parts. It makes one part when
// it fits one UploadPartCopy, since a lone part may be any size, else parts
// of size part.
func copyRanges(start, n, part int64) []Range {
	if n == 0 {
		return []Range{{start, start}}
	}
	var rs []Range
	for off := int64(0); off < n; off += part {
		rs = append(rs, Range{start + off, start + min(off+part, n)})
	}
	return rs
}

// kept returns the Content-Type the archive kept, or "" when none.
func kept(m *zipformat.Metadata) string {
	if m == nil {
		return ""
	}
	return m.ContentType
}
