package plan

import (
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/partwork"

	"github.com/s3zip/s3zip/internal/nameset"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// S3 multipart upload limits.
const (
	MiB = 1 << 20
	GiB = 1 << 30

	MinPartSize = 5 * MiB // every part but the last
	MaxPartSize = 5 * GiB // also the largest UploadPartCopy range
	MaxParts    = 10000

	DefaultPartSize = 16 * MiB
	// DefaultDirectoryPartSize is the largest part of the central
	// directory. The finalizer holds one such part at a time, so its memory
	// does not grow with the entry count; 10 M entries make about 1 GiB of
	// directory, 16 parts.
	DefaultDirectoryPartSize = 64 * MiB
)

// Strategy is a way of choosing part kinds.
type Strategy string

const (
	// StrategyStream sends every byte through workers with UploadPart only.
	StrategyStream Strategy = "stream"
	// StrategyChain lays out like duo, then builds each run between copies
	// server-side as chain parts, so that no object bytes pass through workers.
	StrategyChain Strategy = "chain"
	// StrategyAuto chooses per run between streaming and chaining with the
	// cost Model, taking the fastest plan or the cheapest.
	StrategyAuto Strategy = "auto"
	// StrategyDuo copies every object it can server-side with UploadPartCopy
	// and streams small objects, headers and short prefixes in the parts between.
	StrategyDuo Strategy = "duo"
)

// ParseStrategy parses a strategy name; "" means StrategyAuto.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case "", StrategyAuto:
		return StrategyAuto, nil
	case StrategyStream, StrategyDuo, StrategyChain:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("strategy %q: want auto, stream, duo or chain", s)
}

// PartKind says how a worker produces a part.
type PartKind string

const (
	// PartUpload is assembled from generated headers and ranged reads of
	// sources, and sent with UploadPart.
	PartUpload PartKind = "upload"
	// PartCopy is a ranged UploadPartCopy of one source, with no bytes through the worker.
	PartCopy PartKind = "copy"
	// PartChain is built server-side. Starting from a 5 MiB pad object in
	// the work bucket, each round appends header bytes and ranged copies of
	// sources with a two-part upload, and the finished object is copied into
	// the archive as one part. Only local headers pass through the worker,
	// small objects included. partwork.ChainRounds plans the rounds;
	// docs/DESIGN.md, section "A ZIP as parts", explains them.
	PartChain PartKind = "chain"
)

// Part is one part of the multipart upload, the archive bytes [Start, End).
type Part struct {
	Number int      `json:"part"`
	Kind   PartKind `json:"kind"`
	Start  int64    `json:"start"`
	End    int64    `json:"end"`
	// First and Count name the entries whose header or data overlap the part.
	First EntryIndex `json:"first"`
	Count int        `json:"count"`
	// NeedCRC lists the entries whose CRC-32 the worker must know before it
	// sends the part, since it writes their local header but not all of their data.
	NeedCRC []EntryIndex `json:"needCRC,omitempty"`
	// Carry is how many of the parts right after this one, 0 or 1, its
	// worker copies first, a copy of a whole object whose local header this
	// part ends with. S3's answer to the copy gives the CRC-32 the header
	// needs, so no HEAD asks for it beforehand. The carried part's job rides
	// in this part's job.
	Carry int `json:"carry,omitempty"`
	// CarriedAs, on a carried part, is what its copy is and so what the
	// worker learns from S3's answer to it. carryCopies sets it.
	CarriedAs CarriedCopy `json:"carriedAs,omitempty"`
	// Final marks the FinalParts, built by the finalizer, which carry the
	// central directory and end records.
	Final bool `json:"final,omitempty"`
	// Archive is which archive of a split plan the part is of; Number and
	// the bytes are that archive's.
	Archive int `json:"archive,omitempty"`
}

// Size is the part's length in bytes.
func (p *Part) Size() int64 { return p.End - p.Start }

// CarriedCopy is what a carried copy part copies.
type CarriedCopy string

const (
	// CarriedWhole copies a whole object. S3's answer to the copy is the
	// entry's CRC-32, which the carrying part's header needs.
	CarriedWhole CarriedCopy = "whole"
	// CarriedTail copies the rest of an object whose start the carrying
	// upload part streams. The worker asks S3 for the CRC-32 it stores of
	// the object before it copies. S3's answer to the copy is the CRC-32 of
	// the copied range; zipformat.SplitCRC tells the streamed start's from
	// it and the stored one. Without a stored one it is combined with the
	// streamed bytes', as CopiedTails lists.
	CarriedTail CarriedCopy = "tail"
)

// Options steer planning.
type Options struct {
	Strategy Strategy
	// PartSize is the target size of streamed parts; the default is 16 MiB.
	PartSize int64
	// Workers is how many workers will build parts at once; streamed parts
	// are cut so that their count is a multiple of it where sizes allow.
	Workers int
	// Model prices and times plans for auto; the default is DefaultModel.
	Model *Model
	// Prefer is what auto minimises, time by default or cost.
	Prefer Preference
	// PartsPerBatch is the part jobs one worker invocation will build, the
	// Distributed Map's batch. With it auto times its candidates batch by
	// batch as the Map hands them out, by Plan.Loads. A worker builds a
	// batch's parts side by side but its batches one after another, which
	// an even spread of the parts over the workers does not see. 0 spreads.
	PartsPerBatch int
	// StoresNoCRC, when set, says S3 stores no CRC-32 of a source, as its
	// listing said. A worker that needs such an entry's CRC-32 finds none
	// with its HEAD and probes the data instead, and the model prices that.
	// When nil every source stores one, as AWS's SDKs upload them.
	StoresNoCRC func(Source) bool
	// DirectoryPartSize is the most central directory and end records the
	// finalizer puts in one part, by default DefaultDirectoryPartSize. A
	// longer directory is cut into parts of this size and a shorter last one.
	DirectoryPartSize int64
}

// Plan is the byte-exact layout of an archive and its parts.
type Plan struct {
	Strategy        Strategy      `json:"strategy"`
	Entries         []PlacedEntry `json:"-"`
	Parts           []Part        `json:"-"`
	DirectoryOffset int64         `json:"directoryOffset"`
	DirectorySize   int64         `json:"directorySize"`
	Size            int64         `json:"size"`
	Zip64           bool          `json:"zip64"`
	// Alternative is, for auto, the plan the other preference would have
	// chosen, as predicted; nil when it is the same plan.
	Alternative *Alternative `json:"alternative,omitempty"`
	// Fit is how the plan is run on Options.Workers.
	Fit Fit `json:"fit"`
	// Archives are the archives of a split plan, or nil for one archive.
	Archives []Archive `json:"archives,omitempty"`
	// storesNoCRC is Options.StoresNoCRC, which the plan is priced with.
	storesNoCRC func(Source) bool
}

// Limits on the entries of one plan, besides S3's 10,000 parts. ZIP64
// counts entries in 64 bits; these bind long before.
const (
	// MaxEntries is the most entries one plan holds, since internal/nameset
	// numbers entries in 32 bits where names are compared. The planner's
	// memory binds sooner; see docs/performance.md, section "Planning at scale".
	MaxEntries = nameset.MaxLen
	// MaxJobBytes is the longest part job, a line of the part-job file.
	// One Distributed Map item alone must fit its batch's ItemBatcher
	// MaxInputBytesPerBatch. plan is below internal/stepfn, so a test holds
	// this equal to stepfn.MaxInputBytesPerBatch. A job grows with its
	// part's NeedCRC, as in a chain part of tens of thousands of tiny objects.
	MaxJobBytes = 196608
)

// jobOverhead bounds a part job's bytes besides its NeedCRC list, that is
// the part's fields, a source and a carried part's job.
const jobOverhead = 2048

// checkCount refuses more entries than a plan can number.
func checkCount(n int) error {
	if n > MaxEntries {
		return failure.Limit("%d entries: one plan holds at most %d (entries are numbered in 32 bits; ZIP64 would allow 2^64): split the archive", n, MaxEntries)
	}
	return nil
}

// MaxArchiveSize is the largest object S3 stores, and so the largest
// archive, 10,000 parts of 5 GiB, 48.8 TiB, which AWS calls 50 TB.
const MaxArchiveSize = MaxParts * MaxPartSize

// checkArchiveSize refuses entries whose local headers and data alone,
// before any central directory, are over MaxArchiveSize, since no layout
// can hold them in one object.
func checkArchiveSize(entries []Entry) error {
	var size int64
	for i := range entries {
		size += localHeaderSize(&entries[i]) + entries[i].Size
	}
	if size > MaxArchiveSize {
		return failure.Limit("%d entries make an archive of at least %d bytes (%.2f TiB), over S3's largest object, %d bytes (48.8 TiB: 10,000 parts of 5 GiB): split it into archives of at most that (--split-size, or splitSize in the request)",
			len(entries), size, float64(size)/(1<<40), int64(MaxArchiveSize))
	}
	return nil
}

// checkJobs refuses a plan with a part whose job is too long for the
// Distributed Map to carry, naming the part and how many entries it needs
// the CRC-32 of.
func (p *Plan) checkJobs(parts []Part) error {
	digits := int64(len(fmt.Sprint(len(p.Entries))))
	for i := range parts {
		need := int64(len(parts[i].NeedCRC))
		if bytes := need*(digits+1) + jobOverhead; bytes > MaxJobBytes {
			return failure.Limit("the %s plan's part %d (a %s part of %d entries) needs the CRC-32s of %d of them before it is built: its job would be about %d bytes, over the %d a Distributed Map item may be (MaxInputBytesPerBatch): use a smaller part size, or the stream or auto strategy",
				p.Strategy, parts[i].Number, parts[i].Kind, parts[i].Count, need, bytes, MaxJobBytes)
		}
	}
	return nil
}

// InputError says an entry is unusable as given.
type InputError struct {
	Entry string
	Msg   string
}

func (e *InputError) Error() string { return fmt.Sprintf("entry %q: %s", e.Entry, e.Msg) }

// Make plans an archive of entries, in the order and with the parts the
// strategy chooses. Names must already be final, as CheckNames and
// ResolveDuplicates make them; Make checks them again and refuses
// duplicates and, as CheckFolderClashes does, names that are also folders
// of others.
func Make(entries []Entry, opts Options) (*Plan, error) {
	if opts.PartSize == 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.PartSize < MinPartSize || opts.PartSize > MaxPartSize {
		return nil, fmt.Errorf("part size %d: want between %d (5 MiB) and %d (5 GiB)", opts.PartSize, MinPartSize, MaxPartSize)
	}
	if opts.DirectoryPartSize == 0 {
		opts.DirectoryPartSize = DefaultDirectoryPartSize
	}
	if opts.DirectoryPartSize < MinPartSize || opts.DirectoryPartSize > MaxPartSize {
		return nil, fmt.Errorf("directory part size %d: want between %d (5 MiB) and %d (5 GiB)", opts.DirectoryPartSize, MinPartSize, MaxPartSize)
	}
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if _, err := ParsePreference(string(opts.Prefer)); err != nil {
		return nil, err
	}
	if err := checkCount(len(entries)); err != nil {
		return nil, err
	}
	if err := checkEntries(entries); err != nil {
		return nil, err
	}
	if err := checkArchiveSize(entries); err != nil {
		return nil, err
	}
	switch opts.Strategy {
	case StrategyStream, StrategyDuo, StrategyChain:
	case StrategyAuto, "":
		return makeAuto(entries, opts)
	default:
		return nil, fmt.Errorf("strategy %q: want auto, stream, duo or chain", opts.Strategy)
	}
	var l layout
	switch opts.Strategy {
	case StrategyStream:
		l = streamLayout(entries)
		opts.PartSize = fitPartSize(entries, opts.PartSize, opts.Workers)
	case StrategyDuo:
		l = duoLayout(entries)
	case StrategyChain:
		l = chainLayout(entries)
	}
	chain := func(span) bool { return opts.Strategy == StrategyChain }
	p, err := planWith(entries, l, opts, chain)
	if err != nil {
		return nil, err
	}
	return p.fitted(opts)
}

// fitPartSize raises the streamed part size, up to MaxPartSize, so that
// streaming everything fits S3's part limit.
func fitPartSize(entries []Entry, size int64, workers int) int64 {
	total := int64(0)
	for i := range entries {
		total += localHeaderSize(&entries[i]) + entries[i].Size
	}
	// Room for the final part and for rounding the count up to a multiple
	// of the workers.
	budget := max(int64(MaxParts-2)-min(int64(workers), MaxParts/4), MaxParts/2)
	if need := ceilDiv(total, budget); need > size {
		return min(need, MaxPartSize)
	}
	return size
}

// planWith places entries in the layout's order and cuts parts, building
// the runs between copies server-side where chain says so.
func planWith(entries []Entry, l layout, opts Options, chain func(span) bool) (*Plan, error) {
	p := place(entries, l)
	p.Strategy, p.storesNoCRC = opts.Strategy, opts.StoresNoCRC
	if err := p.cut(l, opts, chain); err != nil {
		return nil, err
	}
	return p, nil
}

func checkEntries(entries []Entry) error {
	if err := CheckNames(entries); err != nil {
		return err
	}
	if err := checkDuplicates(entries); err != nil {
		return err
	}
	if err := CheckFolderClashes(entries); err != nil {
		return err
	}
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Size < 0:
			return &InputError{e.Name, fmt.Sprintf("negative size %d", e.Size)}
		case e.Dir && e.Size != 0:
			return &InputError{e.Name, fmt.Sprintf("directory entry with %d bytes", e.Size)}
		case !e.Dir && e.Size > 0 && (e.Source.Bucket == "" || e.Source.Key == ""):
			return &InputError{e.Name, "no source bucket and key"}
		}
	}
	return nil
}

// layout is what a strategy decides, the order of entries and, for each
// entry copied server-side, where the copy starts in its data. The bytes
// before are streamed with the local header.
type layout struct {
	order    []int         // indices into the input entries
	copyFrom map[int]int64 // input index → first data byte copied
}

// place computes every entry's offset and the central directory's place.
func place(entries []Entry, l layout) *Plan {
	p := &Plan{Entries: make([]PlacedEntry, len(l.order))}
	off := int64(0)
	for i, src := range l.order {
		pe := &p.Entries[i]
		*pe = PlacedEntry{Index: EntryIndex(i), Entry: &entries[src], Offset: off}
		if pe.Size == 0 && pe.CRC32 != KnownCRC(0) {
			// The CRC-32 of no bytes, set in a copy since the input is the caller's.
			empty := entries[src]
			empty.CRC32 = KnownCRC(0)
			pe.Entry = &empty
		}
		pe.HeaderLen = localHeaderSize(pe.Entry)
		off = pe.End()
	}
	p.DirectoryOffset = off
	for i := range p.Entries {
		p.DirectorySize += centralHeaderSize(&p.Entries[i])
	}
	zip64End := zipformat.NeedsZip64End(len(p.Entries), p.DirectoryOffset, p.DirectorySize)
	p.Size = p.DirectoryOffset + p.DirectorySize + zipformat.EndRecordsSize(zip64End)
	p.Zip64 = zip64End
	for i := range p.Entries {
		if p.Entries[i].zip64Sizes() || p.Entries[i].Offset >= zipformat.Uint32Max {
			p.Zip64 = true
		}
	}
	return p
}

// span is a run of archive bytes that becomes one or more parts.
type span struct {
	start, end int64
	copy       bool
}

// cut turns the layout's copies into parts, streams what lies between them,
// and repairs any streamed run too short to be a part.
func (p *Plan) cut(l layout, opts Options, chain func(span) bool) error {
	var spans []span
	pos := int64(0)
	for i, src := range l.order {
		from, ok := l.copyFrom[src]
		if !ok {
			continue
		}
		e := &p.Entries[i]
		cs := e.DataOffset() + from
		if cs > pos {
			spans = append(spans, span{start: pos, end: cs})
		}
		spans = append(spans, span{start: cs, end: e.End(), copy: true})
		pos = e.End()
	}
	spans = append(spans, span{start: pos, end: p.Size})
	spans = mergeShortStreams(spans)

	var parts []Part
	for i, s := range spans {
		last := i == len(spans)-1
		switch {
		case s.copy:
			parts = append(parts, p.copyParts(s)...)
		case last && chain(s):
			parts = p.chainTail(parts, s, opts)
		case last:
			parts = append(parts, p.tailParts(s, opts)...)
		case chain(s):
			parts = append(parts, cutParts(PartChain, s.start, s.end, opts)...)
		default:
			parts = append(parts, cutParts(PartUpload, s.start, s.end, opts)...)
		}
	}
	p.alignChainCuts(parts)
	parts = splitFinal(parts, opts.DirectoryPartSize)
	if len(parts) > MaxParts && p.Strategy != StrategyStream && p.Strategy != StrategyDuo {
		parts = coalesce(parts)
	}
	if len(parts) > MaxParts {
		return failure.Limit("the %s plan needs %d parts; S3 allows %d in one multipart upload (archive of %d bytes, %d entries): raise the part size or use the chain or auto strategy, which assemble in two levels",
			p.Strategy, len(parts), MaxParts, p.Size, len(p.Entries))
	}
	for i := range parts {
		parts[i].Number = i + 1
	}
	p.describeAll(parts)
	if err := p.checkJobs(parts); err != nil {
		return err
	}
	p.Parts = parts
	return nil
}

// alignChainCuts moves each cut between two chain parts that falls inside
// the data of an object of 5 MiB or less to that object's start or end.
// S3 copies no range of such an object, as partwork.CopyRange says, so its
// chain would have to read the piece and send it. A cut stays where it is
// when neither place leaves both parts between MinPartSize and MaxPartSize.
func (p *Plan) alignChainCuts(parts []Part) {
	for i := 0; i+1 < len(parts); i++ {
		a, b := &parts[i], &parts[i+1]
		if a.Kind != PartChain || b.Kind != PartChain {
			continue
		}
		cut := a.End
		k := sort.Search(len(p.Entries), func(j int) bool { return p.Entries[j].End() > cut })
		if k == len(p.Entries) {
			continue
		}
		e := &p.Entries[k]
		if cut <= e.DataOffset() || e.Size > MinPartSize {
			continue
		}
		to := []int64{e.Offset, e.End()}
		if e.End()-cut < cut-e.Offset {
			to[0], to[1] = to[1], to[0]
		}
		for _, t := range to {
			if left, right := t-a.Start, b.End-t; min(left, right) >= MinPartSize && max(left, right) <= MaxPartSize {
				a.End, b.Start = t, t
				break
			}
		}
	}
}

// mergeShortStreams makes every streamed span but the last at least
// MinPartSize long, by moving bytes from the copy that follows it into it,
// or, when that copy would itself become too short, by streaming it whole.
func mergeShortStreams(spans []span) []span {
	// A copy too short to be a part is streamed instead.
	for i := range spans {
		if spans[i].copy && spans[i].end-spans[i].start < MinPartSize {
			spans[i].copy = false
		}
	}
	spans = joinStreams(spans)
	var out []span
	for i := 0; i < len(spans); i++ {
		s := spans[i]
		if s.copy || i == len(spans)-1 {
			out = append(out, s)
			continue
		}
		// s is a stream followed by a copy; the copy is followed by a stream.
		for s.end-s.start < MinPartSize && i+1 < len(spans) {
			next := spans[i+1]
			need := MinPartSize - (s.end - s.start)
			if next.copy && next.end-next.start-need >= MinPartSize {
				s.end += need
				spans[i+1].start += need
				break
			}
			// Take the next span whole, a copy too short to keep or a stream.
			s.end = next.end
			i++
		}
		out = append(out, s)
	}
	return joinStreams(out)
}

// joinStreams merges adjacent streamed spans.
func joinStreams(spans []span) []span {
	merged := spans[:0]
	for _, s := range spans {
		if n := len(merged); n > 0 && !s.copy && !merged[n-1].copy {
			merged[n-1].end = s.end
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// copyParts splits a copy span into ranges of at most MaxPartSize.
func (p *Plan) copyParts(s span) []Part {
	n := ceilDiv(s.end-s.start, MaxPartSize)
	parts := make([]Part, 0, n)
	for k := int64(0); k < n; k++ {
		parts = append(parts, Part{Kind: PartCopy, Start: s.start + share(s.end-s.start, k, n), End: s.start + share(s.end-s.start, k+1, n)})
	}
	return parts
}

// tailParts cuts the last span, which ends with the central directory. The
// data before the directory is streamed in parts of the target size when
// there is enough of it to be a part, and the last part is the directory.
func (p *Plan) tailParts(s span, opts Options) []Part {
	if p.DirectoryOffset-s.start < MinPartSize {
		return []Part{{Kind: PartUpload, Start: s.start, End: s.end}}
	}
	parts := cutParts(PartUpload, s.start, p.DirectoryOffset, opts)
	return append(parts, Part{Kind: PartUpload, Start: p.DirectoryOffset, End: s.end})
}

// splitFinal cuts the last part, which the finalizer builds and which ends
// with the central directory, into parts of size bytes and a last one of
// the rest, and marks them Final. The finalizer writes one at a time, so it
// holds one part of the directory, never all of it. tailParts and chainTail
// leave fewer than MinPartSize bytes before the directory in that part, so
// they all fall in the first of these parts.
func splitFinal(parts []Part, size int64) []Part {
	last := parts[len(parts)-1]
	parts = parts[:len(parts)-1]
	for piece := last; ; piece.Start += size {
		piece.End, piece.Final = min(piece.Start+size, last.End), true
		if parts = append(parts, piece); piece.End == last.End {
			return parts
		}
	}
}

// cutParts cuts [start, end) into equal parts of a kind near the target
// size, each between MinPartSize and MaxPartSize, their count a multiple of
// the worker count where the sizes allow it.
func cutParts(kind PartKind, start, end int64, opts Options) []Part {
	size := end - start
	n := max(1, (size+opts.PartSize/2)/opts.PartSize)
	maxN := max(1, size/MinPartSize)
	minN := ceilDiv(size, MaxPartSize)
	// Round the count up to a multiple of the workers, within the part
	// limit, with room for the final part.
	if w := min(int64(opts.Workers), MaxParts/4); w > 1 && n%w != 0 {
		if up := (n/w + 1) * w; up <= maxN && up < MaxParts {
			n = up
		}
	}
	n = min(max(n, minN), maxN)
	parts := make([]Part, 0, n)
	for k := int64(0); k < n; k++ {
		parts = append(parts, Part{Kind: kind, Start: start + share(size, k, n), End: start + share(size, k+1, n)})
	}
	return parts
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// share returns ⌊size·k/n⌋, the end of the k-th of n equal cuts of size
// bytes, for 0 ≤ k ≤ n. It never forms size·k, which overflows int64 at
// terabytes cut into a million parts.
func share(size, k, n int64) int64 {
	q, r := size/n, size%n
	return q*k + r*k/n
}

// describeAll fills in, for every part, which entries it touches, whose CRC
// it needs and which copy it carries.
func (p *Plan) describeAll(parts []Part) {
	for i := range parts {
		p.describe(&parts[i])
	}
	p.carryCopies(parts)
}

// describe fills in which entries a part touches and whose CRC it needs.
func (p *Plan) describe(part *Part) {
	first := sort.Search(len(p.Entries), func(i int) bool { return p.Entries[i].End() > part.Start })
	last := sort.Search(len(p.Entries), func(i int) bool { return p.Entries[i].Offset >= part.End })
	// Zero-byte entries at part.Start have End == Offset+HeaderLen > Start, so they are included.
	part.First, part.Count = EntryIndex(first), last-first
	if part.Count == 0 {
		part.First = 0
	}
	part.NeedCRC, part.Carry, part.CarriedAs = nil, 0, ""
	if part.Kind == PartCopy || part.Final {
		return
	}
	var learned []bool
	if part.Kind == PartChain {
		// A chain part reads no data. partwork.ChainChecksums says which CRCs
		// its rounds learn by copying objects whole; it needs every other one it writes.
		_, learned = partwork.ChainChecksums(p.Entries[first:last], partwork.ChainRounds(p.Entries[first:last], part.Start, part.End))
	}
	for i := first; i < last; i++ {
		e := &p.Entries[i]
		headerIn := e.Offset < part.End && e.DataOffset() > part.Start
		whole := e.Offset >= part.Start && e.End() <= part.End
		known := whole && (part.Kind == PartUpload || learned[i-first])
		if headerIn && !known {
			part.NeedCRC = append(part.NeedCRC, EntryIndex(i))
		}
	}
}

// carryCopies lets a part that ends with the local header of an object
// copied whole as the next part carry that copy. Its worker copies first and
// takes the CRC-32 from S3's answer instead of asking for it beforehand.
// An upload part that ends with a header and the start of an object copied
// to its end as the next part carries that copy too, and its worker learns
// the CRC-32 itself. It makes a HEAD for the CRC-32 S3 stores before it
// copies, which also tells a server's answer of the stored checksum for a
// ranged copy from the range's own. When S3 stores none, it combines the
// bytes it streams with S3's answer for the rest, as CopiedTails lists.
func (p *Plan) carryCopies(parts []Part) {
	for i := 0; i+1 < len(parts); i++ {
		part, next := &parts[i], &parts[i+1]
		n := len(part.NeedCRC)
		if next.Kind != PartCopy || part.Final || n == 0 || part.NeedCRC[n-1] != next.First {
			continue
		}
		e := &p.Entries[next.First]
		// The object's end in one copy, and the whole header in this part,
		// since a header split over two parts is needed before both.
		if next.End != e.End() || e.Offset < part.Start {
			continue
		}
		switch {
		case next.Start == e.DataOffset():
			part.Carry, next.CarriedAs = 1, CarriedWhole
		case part.Kind == PartUpload:
			part.Carry, next.CarriedAs = 1, CarriedTail
		default:
			continue
		}
		part.NeedCRC = part.NeedCRC[:n-1]
		if len(part.NeedCRC) == 0 {
			part.NeedCRC = nil
		}
	}
}

// CopiedTails lists, by entry index, the entries whose data a part streams
// the start of and carries the copy of the rest of. Their CRC-32s are the
// worker's to learn as CarriedTail, so none is in CRCsNeeded.
func (p *Plan) CopiedTails() map[EntryIndex]bool {
	tails := map[EntryIndex]bool{}
	for i := range p.WorkerParts() {
		if p.Parts[i].Carry == 0 {
			continue
		}
		if next := &p.Parts[i+1]; next.CarriedAs == CarriedTail {
			tails[next.First] = true
		}
	}
	return tails
}

// WorkerParts are the parts workers build, all but the final ones.
func (p *Plan) WorkerParts() []Part { return p.Parts[:firstFinal(p.Parts)] }

// FinalParts are the parts the finalizer builds, last in the upload. They
// hold the central directory, cut into parts of at most
// Options.DirectoryPartSize, the first of them starting with any data too
// short to be a part of its own.
func (p *Plan) FinalParts() []Part { return p.Parts[firstFinal(p.Parts):] }

// firstFinal returns the index of the first of the final parts, the last
// part and the Final parts right before it.
func firstFinal(parts []Part) int {
	n := len(parts) - 1
	for n > 0 && parts[n-1].Final {
		n--
	}
	return n
}

// Carried says whether Parts[i] is carried by the part before it, whose
// job builds it.
func (p *Plan) Carried(i int) bool { return i > 0 && p.Parts[i-1].Carry > 0 }

// FinalPart returns the first part the finalizer builds, the only one
// unless the central directory is longer than a directory part.
func (p *Plan) FinalPart() *Part { return &p.FinalParts()[0] }

// CRCsNeeded lists the entries whose CRC-32 must be known before the workers
// run and is not known yet. A chain part's are not among them, since
// ChainWorkerLearns has its worker learn them before its first round by a
// HEAD, a probe or a read, one round trip for all of them, instead of a
// round of lookups before any worker starts.
func (p *Plan) CRCsNeeded() []EntryIndex {
	var need []EntryIndex
	// A bit an entry, not a map, since a plan of small objects may need
	// nearly every entry's CRC-32.
	seen := make([]uint64, (len(p.Entries)+63)/64)
	for _, part := range p.Parts {
		if part.Kind == PartChain {
			continue
		}
		for _, i := range part.NeedCRC {
			// A header split between two parts is needed by both; ask once.
			if bit := uint64(1) << (i % 64); !p.Entries[i].CRC32.Known && seen[i/64]&bit == 0 {
				seen[i/64] |= bit
				need = append(need, i)
			}
		}
	}
	return need
}

// UnknownCRCError names an entry whose CRC-32 is needed and not known.
type UnknownCRCError struct{ Entry string }

func (e *UnknownCRCError) Error() string {
	return fmt.Sprintf("entry %q: CRC-32 not known (refusing to write a guess)", e.Entry)
}

// Directory returns the central directory followed by the end records. Every
// entry's CRC-32 must be known. The finalizer reads it in parts through
// DirectoryReader instead, since at millions of entries it is gigabytes.
func (p *Plan) Directory() ([]byte, error) {
	buf := make([]byte, p.Size-p.DirectoryOffset)
	r := p.DirectoryReader()
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	if n, err := r.Read(make([]byte, 1)); n > 0 || err != io.EOF {
		return nil, fmt.Errorf("internal error: directory is over %d bytes planned: %v", len(buf), err)
	}
	return buf, nil
}

// DirectoryReader reads the central directory followed by the end records,
// making each entry's header as it is read, so it holds one header, not
// the directory. Every entry's CRC-32 must be known by the time its header
// is read. It says so when the bytes are not the planned length.
func (p *Plan) DirectoryReader() io.Reader { return &directoryReader{p: p} }

type directoryReader struct {
	p       *Plan
	next    int    // entry whose central header comes next
	ended   bool   // the end records are made
	made    []byte // the last record made
	pending []byte // its bytes not read yet
	read    int64
}

func (r *directoryReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		if len(r.pending) == 0 {
			if err := r.make(); err != nil {
				return n, err
			}
		}
		k := copy(b[n:], r.pending)
		r.pending, n, r.read = r.pending[k:], n+k, r.read+int64(k)
	}
	return n, nil
}

// make makes the next record, an entry's central header or the end records.
func (r *directoryReader) make() error {
	p := r.p
	switch {
	case r.next < len(p.Entries):
		e := &p.Entries[r.next]
		if !e.CRC32.Known {
			return &UnknownCRCError{e.Name}
		}
		r.made = appendCentralHeader(r.made[:0], e, e.CRC32.Sum)
		r.next++
	case !r.ended:
		r.made = zipformat.AppendEndRecords(r.made[:0], len(p.Entries), p.DirectoryOffset, p.DirectorySize)
		r.ended = true
	case r.read != p.Size-p.DirectoryOffset:
		return fmt.Errorf("internal error: directory is %d bytes, planned %d", r.read, p.Size-p.DirectoryOffset)
	default:
		return io.EOF
	}
	r.pending = r.made
	if r.read+int64(len(r.made)) > p.Size-p.DirectoryOffset {
		return fmt.Errorf("internal error: directory is over %d bytes, planned %d", r.read+int64(len(r.made)), p.Size-p.DirectoryOffset)
	}
	return nil
}

// ArchiveCRC returns the CRC-32 of the whole archive, from the headers, the
// entries' CRCs and the directory bytes, without reading any data.
func (p *Plan) ArchiveCRC(directory []byte) (uint32, error) {
	crc, err := p.dataCRC()
	if err != nil {
		return 0, err
	}
	return crc32.Update(crc, crc32.IEEETable, directory), nil
}

// ArchiveCRCOfDirectory is ArchiveCRC given the CRC-32 of the directory
// and end records instead of their bytes.
func (p *Plan) ArchiveCRCOfDirectory(directory uint32) (uint32, error) {
	crc, err := p.dataCRC()
	if err != nil {
		return 0, err
	}
	return zipformat.CombineCRC(crc, directory, p.Size-p.DirectoryOffset), nil
}

// dataCRC returns the CRC-32 of the archive's bytes before the central
// directory, making the local headers and combining the data's CRCs.
func (p *Plan) dataCRC() (uint32, error) {
	var crc uint32
	hdr := make([]byte, 0, 512)
	for i := range p.Entries {
		e := &p.Entries[i]
		if !e.CRC32.Known {
			return 0, &UnknownCRCError{e.Name}
		}
		crc, hdr = advanceDataCRC(crc, e, hdr)
	}
	return crc, nil
}
