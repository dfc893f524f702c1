package plan

import (
	"fmt"
	"slices"
	"strings"
)

// InvalidPlanError lists every rule a plan breaks.
type InvalidPlanError struct{ Problems []string }

func (e *InvalidPlanError) Error() string {
	return "invalid plan: " + strings.Join(e.Problems, "; ")
}

// Validate checks the S3 and ZIP rules every plan must keep. Part numbers
// are dense from 1 and at most MaxParts, and parts are contiguous and cover
// the archive. Every part but the last is between MinPartSize and
// MaxPartSize, and copies lie inside one entry's data. Entries are laid end
// to end. The last parts, and only they, carry the central directory and
// are marked Final. The CRCs each part needs are listed.
func (p *Plan) Validate() error {
	if p.Split() {
		return p.validateSplit()
	}
	var bad []string
	add := func(format string, a ...any) {
		if len(bad) < 50 {
			bad = append(bad, fmt.Sprintf(format, a...))
		}
	}
	p.validateEntries(add)
	if n := len(p.Parts); n == 0 {
		add("no parts")
	} else if n > MaxParts {
		add("%d parts, over the S3 limit of %d", n, MaxParts)
	}
	pos := int64(0)
	for i := range p.Parts {
		p.validatePart(add, i, pos)
		pos = p.Parts[i].End
	}
	p.validateDescriptions(add)
	if pos != p.Size {
		add("parts end at %d, archive is %d bytes", pos, p.Size)
	}
	if len(p.Parts) > 0 && p.FinalPart().Start > p.DirectoryOffset {
		add("the first final part starts at %d, after the central directory at %d", p.FinalPart().Start, p.DirectoryOffset)
	}
	if bad != nil {
		return &InvalidPlanError{bad}
	}
	return nil
}

// validateEntries checks the entries lie one after another from 0, each
// numbered by its place, with the header length its name and sizes need,
// and the central directory right after them.
func (p *Plan) validateEntries(add func(format string, a ...any)) {
	off := int64(0)
	for i := range p.Entries {
		validatePlaced(add, &p.Entries[i], EntryIndex(i), off)
		off = p.Entries[i].End()
	}
	if p.DirectoryOffset != off {
		add("central directory at %d, want %d", p.DirectoryOffset, off)
	}
}

// validatePlaced checks e is entry i, placed at off where the entry
// before it ends, with the header length its name and sizes need.
func validatePlaced(add func(format string, a ...any), e *PlacedEntry, i EntryIndex, off int64) {
	if e.Index != i {
		add("entry %d has index %d", i, e.Index)
	}
	if e.Offset != off {
		add("entry %d (%q) at offset %d, want %d", i, e.Name, e.Offset, off)
	}
	if e.HeaderLen != localHeaderSize(e.Entry) {
		add("entry %d (%q) header length %d, want %d", i, e.Name, e.HeaderLen, localHeaderSize(e.Entry))
	}
}

// validatePart checks part i, which must start at pos. It checks its
// number, its size within S3's part limits, that finals come last and hold
// the directory, and that a copy lies within its entry.
func (p *Plan) validatePart(add func(format string, a ...any), i int, pos int64) {
	part := &p.Parts[i]
	last := i == len(p.Parts)-1
	if part.Number != i+1 {
		add("part %d numbered %d", i+1, part.Number)
	}
	if part.Start != pos {
		add("part %d starts at %d, want %d", part.Number, part.Start, pos)
	}
	size := part.Size()
	if size <= 0 && !(last && size == 0) {
		add("part %d is %d bytes", part.Number, size)
	}
	if size > MaxPartSize {
		add("part %d is %d bytes, over the 5 GiB part limit", part.Number, size)
	}
	if !last && size < MinPartSize {
		add("part %d is %d bytes, under the 5 MiB minimum for all but the last part", part.Number, size)
	}
	if last && !part.Final {
		add("the last part %d is not final: the finalizer writes the central directory", part.Number)
	}
	if i > 0 && p.Parts[i-1].Final && !part.Final {
		add("part %d follows a final part and is not final: the finalizer's parts come last", part.Number)
	}
	if !part.Final && part.End > p.DirectoryOffset {
		add("part %d ends at %d, in the central directory at %d, and is not final: only the finalizer writes the directory", part.Number, part.End, p.DirectoryOffset)
	}
	switch part.Kind {
	case PartUpload:
	case PartChain:
		if part.Final {
			add("the final part %d is a chain: the central directory must be written", part.Number)
		}
	case PartCopy:
		if part.Count != 1 {
			add("copy part %d spans %d entries", part.Number, part.Count)
		} else if e := &p.Entries[part.First]; part.Start < e.DataOffset() || part.End > e.End() {
			add("copy part %d [%d,%d) is outside the data of entry %q [%d,%d)", part.Number, part.Start, part.End, e.Name, e.DataOffset(), e.End())
		}
		if part.Final {
			add("the final part %d is a copy: the central directory must be written", part.Number)
		}
	default:
		add("part %d has unknown kind %q", part.Number, part.Kind)
	}
}

// validateDescriptions checks each part's entries, needed CRCs and carries
// are what describing its bytes again gives.
func (p *Plan) validateDescriptions(add func(format string, a ...any)) {
	want := slices.Clone(p.Parts)
	p.describeAll(want)
	for i := range want {
		part, want := &p.Parts[i], &want[i]
		if want.First != part.First || want.Count != part.Count || !slices.Equal(want.NeedCRC, part.NeedCRC) || want.Carry != part.Carry || want.CarriedAs != part.CarriedAs {
			add("part %d entries %d+%d needCRC %v carry %d carriedAs %q, want %d+%d needCRC %v carry %d carriedAs %q", part.Number, part.First, part.Count, part.NeedCRC, part.Carry, part.CarriedAs,
				want.First, want.Count, want.NeedCRC, want.Carry, want.CarriedAs)
		}
	}
}
