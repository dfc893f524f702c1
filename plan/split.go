package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// A split plan lays out several complete, independent archives built by one
// run. It is one Plan, so that whatever runs over a plan's entries and parts
// runs over all archives at once; Part.Archive says which archive a part is
// of, and ArchivePlan gives one archive as a plan of its own. docs/DESIGN.md,
// section "A ZIP as parts", describes how the archives share the plan.

// SplitLimits bound each archive of a split plan; zero leaves a bound off.
type SplitLimits struct {
	// Bytes is the most an archive may be, unless one entry alone makes it
	// more. That entry then stands alone in an Oversize archive.
	Bytes int64
	// Entries is the most entries an archive may hold.
	Entries int
	// Listing, when set, is a listing of its entries each archive will end
	// with, such as a SHA256SUMS checksums file, one line an entry. Every
	// archive leaves room for it, within both limits.
	Listing *Listing
}

// Listing is an entry listing the archive's other entries, one line each.
type Listing struct {
	Name string
	// Line is the length of an entry's line in the listing.
	Line func(e *Entry) int64
}

// On says whether the limits split anything.
func (l SplitLimits) On() bool { return l.Bytes > 0 || l.Entries > 0 }

// MaxArchives is the most archives one split plan makes. Archive names
// carry a 4-digit number, name-0001.zip to name-9999.zip, and a longer
// list of archives would only be harder to hand to anyone.
const MaxArchives = 9999

// MinSplitBytes is the smallest archive there is, one empty entry with a
// one-byte name, its headers and the end records. A byte limit below it
// would leave room for nothing.
var MinSplitBytes = zipformat.LocalHeaderSize(1, false) + zipformat.CentralHeaderSize(1, 0, false, 0) + zipformat.EndRecordsSize(false)

// Check refuses limits no archive can keep.
func (l SplitLimits) Check() error {
	switch {
	case l.Bytes < 0:
		return fmt.Errorf("split size %d: want a size in bytes (0 for no limit)", l.Bytes)
	case l.Bytes > 0 && l.Bytes < MinSplitBytes:
		return fmt.Errorf("split size %d bytes: the smallest archive (one empty entry with a one-character name: its two headers and the end records) is %d bytes; want at least that", l.Bytes, MinSplitBytes)
	case l.Entries < 0:
		return fmt.Errorf("split entries %d: want 1 or more (0 for no limit)", l.Entries)
	case l.Listing != nil && l.Entries == 1:
		return fmt.Errorf("split entries 1: each archive also holds its listing %s; want 2 or more", l.Listing.Name)
	}
	return nil
}

// Archive is one archive of a split plan, where its entries and parts are
// in the plan, and its own layout.
type Archive struct {
	First   EntryIndex `json:"first"`   // its first entry in Plan.Entries
	Entries int        `json:"entries"` // how many
	// WorkerParts and FinalParts count its parts among the plan's worker
	// and final parts.
	WorkerParts     int   `json:"workerParts"`
	FinalParts      int   `json:"finalParts"`
	Size            int64 `json:"size"`
	DirectoryOffset int64 `json:"directoryOffset"`
	DirectorySize   int64 `json:"directorySize"`
	Zip64           bool  `json:"zip64"`
	// Strategy is the strategy its parts were cut with; auto chooses for
	// each archive.
	Strategy Strategy `json:"strategy"`
	// Oversize says the archive is over SplitLimits.Bytes, because it holds
	// one entry that is.
	Oversize bool `json:"oversize,omitempty"`
	// Upload is the archive's multipart upload, once the run created it.
	// Every part job of the archive names it.
	Upload *Upload `json:"upload,omitempty"`
}

// Upload names an archive's multipart upload.
type Upload struct {
	Key      string `json:"key"`
	UploadID string `json:"uploadId"`
}

// Split says whether the plan has Archives, laid out for more than one
// archive; a plan made without limits has none.
func (p *Plan) Split() bool { return len(p.Archives) > 0 }

// uploads is how many multipart uploads the plan runs.
func (p *Plan) uploads() int { return max(1, len(p.Archives)) }

// SplitEntries cuts entries, in order, into the runs that become archives
// under the limits, each run as long as its archive stays within them. An
// archive's size is taken at its largest, with a ZIP64 offset in every
// central header and ZIP64 end records, so the archive planned is never
// larger. A run's first entry always fits, alone if it must.
func SplitEntries(entries []Entry, l SplitLimits) [][2]int {
	var runs [][2]int
	start, size := 0, int64(0)
	end, most := zipformat.EndRecordsSize(true), l.Entries
	if l.Listing != nil {
		// The listing's headers, whose size grows with the lines below, and
		// its place among the entries.
		end += entryCost(l.Listing.Name, 0, 0)
		most--
	}
	for i := range entries {
		e := &entries[i]
		cost := entryCost(e.Name, len(e.Meta), e.Size)
		if l.Listing != nil {
			cost += l.Listing.Line(e)
		}
		full := l.Entries > 0 && i-start >= most || l.Bytes > 0 && size+cost+end > l.Bytes
		if i > start && full {
			runs = append(runs, [2]int{start, i})
			start, size = i, 0
		}
		size += cost
	}
	return append(runs, [2]int{start, len(entries)})
}

// CheckArchives refuses more archives than a run names.
func CheckArchives(entries, archives int) error {
	if archives > MaxArchives {
		return failure.Limit("%d entries under the split limits make %d archives; a run writes at most %d (name-0001 to name-%04d): raise the split size or entries", entries, archives, MaxArchives, MaxArchives)
	}
	return nil
}

// entryCost returns the most an entry adds to an archive, given its name,
// the length of its metadata extra field and its size. That is its local
// header, data and central header with a ZIP64 offset.
func entryCost(name string, metaLen int, size int64) int64 {
	z := zipformat.NeedsZip64Sizes(size)
	return zipformat.LocalHeaderSize(len(name), z) + size + zipformat.CentralHeaderSize(len(name), metaLen, z, zipformat.Uint32Max)
}

// MakeSplit plans entries as archives cut by SplitEntries, each planned as
// Make plans one, joined into one plan.
func MakeSplit(entries []Entry, opts Options, l SplitLimits) (*Plan, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	if err := checkCount(len(entries)); err != nil {
		return nil, err
	}
	// Names are checked across archives too, since the archives are extracted side by side.
	if err := checkEntries(entries); err != nil {
		return nil, err
	}
	return MakeArchives(entries, SplitEntries(entries, l), opts, l)
}

// MakeArchives plans the runs of entries SplitEntries cut, each with its
// listing added, as archives, each planned as Make plans one, joined into
// one plan. The limits say which archives are oversize. Make checks each
// run's names; a listing's name is in every archive.
func MakeArchives(entries []Entry, runs [][2]int, opts Options, l SplitLimits) (*Plan, error) {
	if err := checkCount(len(entries)); err != nil {
		return nil, err
	}
	if err := CheckArchives(len(entries), len(runs)); err != nil {
		return nil, err
	}
	plans := make([]*Plan, len(runs))
	for k, r := range runs {
		p, err := Make(entries[r[0]:r[1]], opts)
		if err != nil {
			return nil, fmt.Errorf("archive %d of %d (entries %d to %d): %w", k+1, len(runs), r[0]+1, r[1], err)
		}
		plans[k] = p
	}
	p := joinArchives(plans, l)
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	return p.fitted(opts)
}

// joinArchives joins archives' plans into one split plan.
func joinArchives(plans []*Plan, l SplitLimits) *Plan {
	p := &Plan{Strategy: plans[0].Strategy, Archives: make([]Archive, len(plans)), storesNoCRC: plans[0].storesNoCRC}
	var finals []Part
	for k, a := range plans {
		base := EntryIndex(len(p.Entries))
		p.Archives[k] = Archive{First: base, Entries: len(a.Entries), WorkerParts: len(a.WorkerParts()), FinalParts: len(a.FinalParts()),
			Size: a.Size, DirectoryOffset: a.DirectoryOffset, DirectorySize: a.DirectorySize, Zip64: a.Zip64, Strategy: a.Strategy,
			Oversize: l.Bytes > 0 && a.Size > l.Bytes}
		for _, e := range a.Entries {
			e.Index += base
			p.Entries = append(p.Entries, e)
		}
		for _, part := range a.Parts {
			part.Archive, part.First = k, part.First+base
			part.NeedCRC = rebase(part.NeedCRC, base)
			if part.Final {
				finals = append(finals, part)
			} else {
				p.Parts = append(p.Parts, part)
			}
		}
		p.Size += a.Size
		p.Zip64 = p.Zip64 || a.Zip64
	}
	p.Parts = append(p.Parts, finals...)
	return p
}

// rebase adds base to every index.
func rebase(idx []EntryIndex, base EntryIndex) []EntryIndex {
	if len(idx) == 0 || base == 0 {
		return idx
	}
	out := make([]EntryIndex, len(idx))
	for i, v := range idx {
		out[i] = v + base
	}
	return out
}

// ArchivePlan returns archive k of a split plan as a plan of its own, its
// entries and parts numbered from 0 as Make numbers them. Its entries share
// the split plan's, so a CRC-32 set through one is set in both.
func (p *Plan) ArchivePlan(k int) *Plan {
	a := &p.Archives[k]
	v := &Plan{Strategy: a.Strategy, Size: a.Size, DirectoryOffset: a.DirectoryOffset, DirectorySize: a.DirectorySize, Zip64: a.Zip64, Fit: p.Fit}
	v.Entries = make([]PlacedEntry, a.Entries)
	for i := range v.Entries {
		v.Entries[i] = p.Entries[int(a.First)+i]
		v.Entries[i].Index = EntryIndex(i)
	}
	v.Parts = archiveParts(p.Parts, p.Archives, k)
	return v
}

// archiveParts are archive k's parts, workers then finals, numbered by
// entry from 0 as Make numbers them.
func archiveParts(parts []Part, archives []Archive, k int) []Part {
	a := &archives[k]
	workers, finals := splitParts(parts, archives, k)
	out := make([]Part, 0, len(workers)+len(finals))
	for _, part := range append(workers[:len(workers):len(workers)], finals...) {
		part.First = part.First - a.First
		part.NeedCRC = rebase(part.NeedCRC, -a.First)
		out = append(out, part)
	}
	return out
}

// ArchiveOf returns the number of entry i's archive in a split plan,
// counting from 1 as name-0001.zip does, or 0 in a plan of one archive.
func (p *Plan) ArchiveOf(i EntryIndex) int {
	if !p.Split() {
		return 0
	}
	k, _ := slices.BinarySearchFunc(p.Archives, i, func(a Archive, i EntryIndex) int { return cmp.Compare(a.First, i+1) })
	return k
}

// splitParts are archive k's worker and final parts among a split plan's
// parts.
func splitParts(parts []Part, archives []Archive, k int) (workers, finals []Part) {
	w, f := 0, firstFinal(parts)
	for j := range k {
		w += archives[j].WorkerParts
		f += archives[j].FinalParts
	}
	a := &archives[k]
	return parts[w : w+a.WorkerParts], parts[f : f+a.FinalParts]
}

// validateSplit checks that a split plan's archives hold every entry and
// part in order, and that each is a valid plan of its own.
func (p *Plan) validateSplit() error {
	var bad []string
	entries, workers, finals := 0, 0, 0
	for k := range p.Archives {
		a := &p.Archives[k]
		if int(a.First) != entries {
			bad = append(bad, fmt.Sprintf("archive %d starts at entry %d, want %d", k+1, a.First, entries))
		}
		entries, workers, finals = entries+a.Entries, workers+a.WorkerParts, finals+a.FinalParts
	}
	if entries != len(p.Entries) || workers != len(p.WorkerParts()) || workers+finals != len(p.Parts) {
		bad = append(bad, fmt.Sprintf("archives hold %d entries, %d worker and %d final parts; the plan has %d, %d and %d",
			entries, workers, finals, len(p.Entries), len(p.WorkerParts()), len(p.Parts)-len(p.WorkerParts())))
	}
	if bad != nil {
		return &InvalidPlanError{bad}
	}
	for k := range p.Archives {
		for _, part := range p.splitParts(k) {
			if part.Archive != k {
				return &InvalidPlanError{[]string{fmt.Sprintf("archive %d's part %d says it is archive %d's", k+1, part.Number, part.Archive+1)}}
			}
		}
		if err := p.ArchivePlan(k).Validate(); err != nil {
			return fmt.Errorf("archive %d of %d: %w", k+1, len(p.Archives), err)
		}
	}
	return nil
}

// splitParts are archive k's parts, workers then finals.
func (p *Plan) splitParts(k int) []Part {
	workers, finals := splitParts(p.Parts, p.Archives, k)
	return append(workers[:len(workers):len(workers)], finals...)
}
