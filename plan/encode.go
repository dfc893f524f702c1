package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// FormatVersion is the version of the serialized plan.
const FormatVersion = 2

// Header is the small document beside the entries and part jobs. It holds
// what the finalizer needs besides them, and what a reader of the plan wants first.
type Header struct {
	Version         int      `json:"version"`
	Strategy        Strategy `json:"strategy"`
	Size            int64    `json:"size"`
	Entries         int      `json:"entries"`
	DirectoryOffset int64    `json:"directoryOffset"`
	DirectorySize   int64    `json:"directorySize"`
	Zip64           bool     `json:"zip64"`
	// Parts is the number of parts. The finalizer builds the last ones,
	// Final and then the DirectoryParts of central directory beyond one
	// directory part, and they are not among the part jobs.
	Parts          int     `json:"parts"`
	Final          PartJob `json:"final"`
	DirectoryParts []Part  `json:"directoryParts,omitempty"`
	Stats          Stats   `json:"stats"`
	// Archives are a split plan's archives. Final and DirectoryParts are
	// then every archive's final parts, in archive order.
	Archives []Archive `json:"archives,omitempty"`
	// Fit is how the plan was cut and priced for its workers, so that a plan
	// read back after the planner's CRC round runs as it was priced.
	Fit Fit `json:"fit,omitzero"`
}

// PartJob is one line of the part-job file, a part and what a worker needs
// to build it without reading the whole plan.
type PartJob struct {
	Part
	// EntriesRange is the byte range [from, to) of the entries file that holds
	// the entries First..First+Count-1, one JSON line each.
	EntriesRange [2]int64 `json:"entriesRange"`
	// A copy part names its source, the CRC that checks a copy of a whole
	// object when known, and the source bytes [from, to) copied.
	Source      *Source  `json:"source,omitempty"`
	SourceRange [2]int64 `json:"sourceRange,omitzero"`
	SourceSize  int64    `json:"sourceSize,omitempty"`
	CRC32       CRC      `json:"crc32,omitzero"`
	// Carried are the jobs of the parts this one carries by Part.Carry. The
	// worker builds them first and they have no line of their own.
	Carried []PartJob `json:"carried,omitempty"`
	// Upload is, in a split plan, the multipart upload of the part's
	// Part.Archive, which the part is sent to.
	Upload *Upload `json:"upload,omitempty"`
}

// Encoded is a serialized plan.
type Encoded struct {
	Header  []byte // JSON
	Entries []byte // JSON Lines, one PlacedEntry per line, in archive order
	Parts   []byte // JSON Lines, one PartJob per line, for the workers
	Jobs    int    // lines in Parts, the worker parts less the carried ones
}

// Encode serializes the plan in memory, for tests and small plans. The
// planner writes with EncodeTo, which holds no file.
func (p *Plan) Encode() (*Encoded, error) {
	var entries, parts bytes.Buffer
	header, jobs, err := p.EncodeTo(&entries, &parts)
	if err != nil {
		return nil, err
	}
	return &Encoded{Header: header, Entries: entries.Bytes(), Parts: parts.Bytes(), Jobs: jobs}, nil
}

// EncodeTo writes the entries file and the part-job file as it makes them,
// and returns the header and the number of part jobs. It holds a buffer and
// the line starts of the entries parts begin and end at, not the files,
// since at ten million entries the entries file is gigabytes.
func (p *Plan) EncodeTo(entries, parts io.Writer) (header []byte, jobs int, err error) {
	lineStart, err := p.encodeEntries(entries)
	if err != nil {
		return nil, 0, err
	}
	at := func(i EntryIndex) int64 { return lineStart[i] }
	out := bufio.NewWriterSize(parts, encodeBuffer)
	enc := json.NewEncoder(out)
	for i := range p.WorkerParts() {
		if p.Carried(i) {
			continue
		}
		if err := enc.Encode(p.workerJob(i, at)); err != nil {
			return nil, 0, fmt.Errorf("encode part %d: %w", p.Parts[i].Number, err)
		}
		jobs++
	}
	if err := out.Flush(); err != nil {
		return nil, 0, fmt.Errorf("write part jobs: %w", err)
	}
	h := Header{
		Version: FormatVersion, Strategy: p.Strategy, Size: p.Size, Entries: len(p.Entries),
		DirectoryOffset: p.DirectoryOffset, DirectorySize: p.DirectorySize, Zip64: p.Zip64,
		Parts: len(p.Parts), Final: p.partJob(p.FinalPart(), at), DirectoryParts: p.FinalParts()[1:], Stats: p.Stats(), Archives: p.Archives,
		Fit: p.Fit,
	}
	if header, err = json.MarshalIndent(h, "", "  "); err != nil {
		return nil, 0, fmt.Errorf("encode plan header: %w", err)
	}
	return header, jobs, nil
}

// encodeBuffer is what EncodeTo holds of a file before writing it.
const encodeBuffer = 1 << 20

// encodeEntries writes one JSON line an entry. It returns, by entry index,
// where the lines that parts begin and end at start, the only ones part
// jobs name; len(Entries) is where the file ends.
func (p *Plan) encodeEntries(w io.Writer) (map[EntryIndex]int64, error) {
	lineStart := make(map[EntryIndex]int64, 2*len(p.Parts))
	for i := range p.Parts {
		lineStart[p.Parts[i].First] = -1
		lineStart[p.Parts[i].First+EntryIndex(p.Parts[i].Count)] = -1
	}
	out := bufio.NewWriterSize(w, encodeBuffer)
	counted := &countingWriter{w: out}
	enc := json.NewEncoder(counted)
	for i := range p.Entries {
		if _, ok := lineStart[EntryIndex(i)]; ok {
			lineStart[EntryIndex(i)] = counted.n
		}
		if err := enc.Encode(&p.Entries[i]); err != nil {
			return nil, fmt.Errorf("encode entry %q: %w", p.Entries[i].Name, err)
		}
	}
	lineStart[EntryIndex(len(p.Entries))] = counted.n
	if err := out.Flush(); err != nil {
		return nil, fmt.Errorf("write entries: %w", err)
	}
	return lineStart, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// partJob returns part's job, given where each entry's line starts in the
// entries file; lineStart of len(Entries) is where the file ends.
func (p *Plan) partJob(part *Part, lineStart func(EntryIndex) int64) PartJob {
	j := PartJob{Part: *part, EntriesRange: [2]int64{lineStart(part.First), lineStart(part.First + EntryIndex(part.Count))}}
	if p.Split() {
		j.Upload = p.Archives[part.Archive].Upload
	}
	if part.Kind == PartCopy {
		e := &p.Entries[part.First]
		src := e.Source
		j.Source = &src
		j.SourceRange = [2]int64{part.Start - e.DataOffset(), part.End - e.DataOffset()}
		j.SourceSize = e.Size
		j.CRC32 = e.CRC32
	}
	return j
}

// workerJob returns the job of worker part i, which is not a carried one,
// with the jobs of the parts it carries.
func (p *Plan) workerJob(i int, lineStart func(EntryIndex) int64) PartJob {
	j := p.partJob(&p.Parts[i], lineStart)
	for k := 1; k <= p.Parts[i].Carry; k++ {
		j.Carried = append(j.Carried, p.partJob(&p.Parts[i+k], lineStart))
	}
	return j
}

// jobBytes returns the lengths of the worker parts' job lines, 0 for a
// carried part. They are as Encode writes them but with every entries-file
// offset at its longest, 13 digits for a terabyte of entries, so no shorter
// than the lines Encode writes once it has written the entries file.
func (p *Plan) jobBytes() []int {
	longest := func(EntryIndex) int64 { return 1e12 }
	sizes := make([]int, len(p.WorkerParts()))
	for i := range sizes {
		if p.Carried(i) {
			continue
		}
		line, _ := json.Marshal(p.workerJob(i, longest)) // numbers and strings always encode
		sizes[i] = len(line) + 1
		if p.Split() {
			// The uploads its job and its carried ones will name, which the
			// run creates after planning, count at their longest.
			sizes[i] += (1 + p.Parts[i].Carry) * maxUploadBytes
		}
	}
	return sizes
}

// maxUploadBytes bounds what naming an upload adds to a part job, a key of
// S3's 1,024 bytes, an upload ID and the field's JSON. AWS's upload IDs are
// about 100 characters; 512 allows for other servers'.
const maxUploadBytes = len(`,"upload":{"key":"","uploadId":""}`) + 1024 + 512

// DecodeEntries reads placed entries, one JSON line each.
func DecodeEntries(r io.Reader) ([]PlacedEntry, error) {
	var out []PlacedEntry
	entries := NewEntryReader(r)
	for {
		e, err := entries.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
}

// DecodeParts reads part jobs, one JSON line each.
func DecodeParts(r io.Reader) ([]PartJob, error) {
	var out []PartJob
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var j PartJob
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return nil, fmt.Errorf("parts line %d: %w", line, err)
		}
		out = append(out, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read parts: %w", err)
	}
	return out, nil
}

// Decode rebuilds a plan from its header, entries and part jobs, and
// validates it.
func Decode(header []byte, entries, parts io.Reader) (*Plan, error) {
	l, err := DecodeLayout(header, parts)
	if err != nil {
		return nil, err
	}
	p := &Plan{Strategy: l.Strategy, Size: l.Size, DirectoryOffset: l.DirectoryOffset, DirectorySize: l.DirectorySize, Zip64: l.Zip64, Archives: l.Archives, Parts: l.Parts, Fit: l.Fit}
	if p.Entries, err = DecodeEntries(entries); err != nil {
		return nil, err
	}
	if len(p.Entries) != l.Entries {
		return nil, fmt.Errorf("plan: %d entries, header says %d", len(p.Entries), l.Entries)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}
