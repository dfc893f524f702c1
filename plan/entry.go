package plan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// Source is the S3 object an entry's bytes come from. It is pinned by ETag,
// and by version when the bucket is versioned, so that every read and copy
// of it sees the same bytes the plan was made for.
type Source struct {
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	ETag      string `json:"etag,omitempty"`
	VersionID string `json:"versionId,omitempty"`
}

// CRC is an entry's CRC-32, which may not be known yet.
type CRC struct {
	Sum   uint32
	Known bool
}

// KnownCRC returns a known CRC.
func KnownCRC(sum uint32) CRC { return CRC{Sum: sum, Known: true} }

func (c CRC) String() string {
	if !c.Known {
		return "unknown"
	}
	return fmt.Sprintf("%08x", c.Sum)
}

// IsZero reports whether the CRC is unknown, for json omitzero.
func (c CRC) IsZero() bool { return !c.Known }

// MarshalJSON writes the CRC as 8 hex digits, or null when unknown.
func (c CRC) MarshalJSON() ([]byte, error) {
	if !c.Known {
		return []byte("null"), nil
	}
	return []byte(`"` + c.String() + `"`), nil
}

// UnmarshalJSON reads 8 hex digits or null.
func (c *CRC) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = CRC{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("crc32: %w", err)
	}
	v, err := ParseHexCRC(s)
	if err != nil {
		return err
	}
	*c = KnownCRC(v)
	return nil
}

// ParseHexCRC parses a CRC-32 written as 8 hexadecimal digits.
func ParseHexCRC(s string) (uint32, error) {
	if len(s) != 8 {
		return 0, fmt.Errorf("crc32 %q: want 8 hex digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("crc32 %q: want 8 hex digits", s)
	}
	return uint32(v), nil
}

// Entry is one file of the archive before it is placed.
type Entry struct {
	Name    string    `json:"name"`
	Source  Source    `json:"source"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	CRC32   CRC       `json:"crc32,omitzero"`
	// Dir marks a directory entry, whose name ends in "/" and which has no data.
	Dir bool `json:"dir,omitempty"`
	// Method is the entry's compression, MethodStore or MethodDeflate. A
	// deflated entry's Source holds its compressed bytes, and Size and CRC32
	// are theirs, what the archive holds and workers copy and check. RawSize
	// and RawCRC32 are the uncompressed data's, which its headers carry.
	Method uint16 `json:"method,omitempty"`
	// Mode is the Unix permission bits the object's user metadata gives, as
	// internal/objmeta reads them, or 0 when none. The central header's
	// external attributes carry it. Beside Method, it takes no room of its own.
	Mode     uint32 `json:"mode,omitempty"`
	RawSize  int64  `json:"rawSize,omitempty"`
	RawCRC32 CRC    `json:"rawCrc32,omitzero"`
	// Origin is a deflated entry's own object; Source is its compressed copy.
	Origin *Source `json:"origin,omitempty"`
	// SHA256 is the uncompressed data's SHA-256 in hex, when the request
	// asked for digests.
	SHA256 string `json:"sha256,omitempty"`
	// Meta is the object's metadata extra field as
	// zipformat.AppendMetadataExtra encodes it, when the request keeps
	// metadata. The central header carries it, and its length is the directory's.
	Meta MetaField `json:"meta,omitempty"`
}

// MetaField is an encoded extra field, base64 in JSON. It holds the bytes
// in a string, 16 bytes of an Entry where a slice would take 24, and most
// entries have none.
type MetaField string

// MarshalText writes the field as base64.
func (f MetaField) MarshalText() ([]byte, error) {
	return base64.StdEncoding.AppendEncode(nil, []byte(f)), nil
}

// UnmarshalText reads base64.
func (f *MetaField) UnmarshalText(b []byte) error {
	raw, err := base64.StdEncoding.AppendDecode(nil, b)
	if err != nil {
		return fmt.Errorf("metadata extra field: %w", err)
	}
	*f = MetaField(raw)
	return nil
}

// Compression methods, from APPNOTE 4.4.5.
const (
	MethodStore   = zipformat.MethodStore
	MethodDeflate = zipformat.MethodDeflate
)

// UncompressedSize is the size of the entry's data once extracted.
func (e *Entry) UncompressedSize() int64 {
	if e.Method == MethodDeflate {
		return e.RawSize
	}
	return e.Size
}

// zip64Sizes reports whether either of the entry's sizes overflows the
// 32-bit header fields.
func (e *Entry) zip64Sizes() bool {
	return zipformat.NeedsZip64Sizes(e.Size) || zipformat.NeedsZip64Sizes(e.UncompressedSize())
}

// headerCRC returns the CRC-32 the headers carry, the uncompressed data's.
// dataCRC is the CRC of the bytes the archive holds, e.CRC32 or what a
// worker computed.
func (e *Entry) headerCRC(dataCRC uint32) uint32 {
	if e.Method == MethodDeflate {
		return e.RawCRC32.Sum
	}
	return dataCRC
}

// EntryIndex is an entry's position in the archive, in Plan.Entries, the
// entries file and PlacedEntry.Index. It keys every map of CRC-32s learned
// or computed. A position among one part's entries, such as Segment.Entry,
// is a plain int, so the two never mix.
type EntryIndex int

// PlacedEntry is an entry at its place in the archive. Its local header
// starts at Offset and is HeaderLen bytes long, and its data follows.
//
// Entry is shared, not copied. Every plan Make lays out of the same input,
// such as auto's candidates, points into that input, so placing an entry
// costs 32 bytes instead of about 170; docs/performance.md, section
// "Planning at scale", has the figures. A CRC-32 the planner learns through
// a plan is a fact about the object and is set in that input too.
type PlacedEntry struct {
	Index EntryIndex `json:"i"`
	*Entry
	Offset    int64 `json:"offset"`
	HeaderLen int64 `json:"headerLen"`
}

// DataOffset is where the entry's data starts in the archive.
func (e *PlacedEntry) DataOffset() int64 { return e.Offset + e.HeaderLen }

// End is the offset just past the entry's data.
func (e *PlacedEntry) End() int64 { return e.DataOffset() + e.Size }

// Span returns where the entry lies in the archive, its local header from
// offset and its data from dataOffset to end.
func (e *PlacedEntry) Span() (offset, dataOffset, end int64) {
	return e.Offset, e.DataOffset(), e.End()
}
