package zipformat

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// The object metadata extra field: what `create --keep-metadata` records of
// each source object so that `extract` can write it back (docs/metadata.md
// is its specification). It is a third-party extra field (APPNOTE 4.6): a
// reader that does not know its ID skips it by its length, as APPNOTE 4.5.1
// asks, so every other reader opens the archive as before. It is written in
// the central directory only: extract reads metadata from there, and the
// local headers (whose lengths place every entry's data) stay the same
// whether metadata is kept or not.
//
//	id        u16  MetadataExtraID ("s3" as the bytes are written)
//	size      u16  length of what follows
//	version   u8   MetadataVersion
//	records   ...  each: tag u8, length u16, value (length bytes)
//
// All integers little-endian, as everywhere in ZIP. Record tags:
//
//	1 Content-Type       value: the header's value
//	2 Content-Encoding   value: the header's value
//	3 Cache-Control      value: the header's value
//	4 user metadata      value: key length u16, key, value (the rest)
//
// A reader skips a record whose tag it does not know (a later writer may add
// some); a version it does not know it refuses, as the layout may differ.
const (
	MetadataExtraID = 0x3373
	MetadataVersion = 1

	metaTagContentType     = 1
	metaTagContentEncoding = 2
	metaTagCacheControl    = 3
	metaTagUser            = 4

	// MaxMetadataExtraLen is the longest metadata extra field, header
	// included: what the central header's 16-bit extra length leaves
	// beside the longest ZIP64 field and the extended timestamp.
	MaxMetadataExtraLen = Uint16Max - (4 + 24) - ExtTimeExtraLen
)

// Metadata is what S3 says of an object beyond its bytes: the headers a
// GET returns it with and its user metadata (x-amz-meta-*, keys as S3
// returns them: lower case, without the prefix).
type Metadata struct {
	ContentType     string            `json:"contentType,omitempty"`
	ContentEncoding string            `json:"contentEncoding,omitempty"`
	CacheControl    string            `json:"cacheControl,omitempty"`
	User            map[string]string `json:"user,omitempty"`
}

// IsZero reports whether m says nothing.
func (m *Metadata) IsZero() bool {
	return m == nil || m.ContentType == "" && m.ContentEncoding == "" && m.CacheControl == "" && len(m.User) == 0
}

// MetadataTooLongError is why an object's metadata cannot be kept: its
// extra field would pass the central header's limit.
type MetadataTooLongError struct{ Len int }

func (e *MetadataTooLongError) Error() string {
	return fmt.Sprintf("its metadata takes %d bytes as a ZIP extra field, more than the %d a central directory header has room for", e.Len, MaxMetadataExtraLen)
}

// AppendMetadataExtra appends m's extra field, header included, to dst
// (records in a fixed order, user keys sorted, so equal metadata is equal
// bytes). A value longer than a record holds or a field longer than
// MaxMetadataExtraLen is an error (*MetadataTooLongError for the latter).
func AppendMetadataExtra(dst []byte, m *Metadata) ([]byte, error) {
	start := len(dst)
	b := writeBuf(dst)
	b.u16(MetadataExtraID)
	b.u16(0) // size, set below
	b = append(b, MetadataVersion)
	record := func(tag byte, parts ...string) error {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		if len(parts) > 1 {
			n += 2
		}
		if n > Uint16Max {
			return &MetadataTooLongError{Len: n}
		}
		b = append(b, tag)
		b.u16(uint16(n))
		if len(parts) > 1 {
			b.u16(uint16(len(parts[0])))
		}
		for _, p := range parts {
			b.str(p)
		}
		return nil
	}
	for _, f := range []struct {
		tag byte
		v   string
	}{{metaTagContentType, m.ContentType}, {metaTagContentEncoding, m.ContentEncoding}, {metaTagCacheControl, m.CacheControl}} {
		if f.v != "" {
			if err := record(f.tag, f.v); err != nil {
				return dst, err
			}
		}
	}
	keys := make([]string, 0, len(m.User))
	for k := range m.User {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := record(metaTagUser, k, m.User[k]); err != nil {
			return dst, err
		}
	}
	n := len(b) - start
	if n > MaxMetadataExtraLen {
		return dst, &MetadataTooLongError{Len: n}
	}
	binary.LittleEndian.PutUint16(b[start+2:], uint16(n-4))
	return b, nil
}

// ParseMetadataExtra reads a metadata extra field's data (what follows its
// id and size). Malformed data is an error saying what is wrong where.
func ParseMetadataExtra(data []byte) (*Metadata, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("metadata extra field 0x%04x is empty (want version %d and records)", MetadataExtraID, MetadataVersion)
	}
	if data[0] != MetadataVersion {
		return nil, fmt.Errorf("metadata extra field 0x%04x has version %d; this s3zip reads version %d (a newer s3zip wrote it?)", MetadataExtraID, data[0], MetadataVersion)
	}
	m := &Metadata{}
	for at := 1; at < len(data); {
		if len(data)-at < 3 {
			return nil, fmt.Errorf("metadata extra field 0x%04x: record at byte %d is cut short (%d bytes left, a record header is 3)", MetadataExtraID, at, len(data)-at)
		}
		tag, n := data[at], int(binary.LittleEndian.Uint16(data[at+1:]))
		at += 3
		if n > len(data)-at {
			return nil, fmt.Errorf("metadata extra field 0x%04x: record %d at byte %d says %d bytes, only %d follow", MetadataExtraID, tag, at-3, n, len(data)-at)
		}
		v := data[at : at+n]
		at += n
		switch tag {
		case metaTagContentType:
			m.ContentType = string(v)
		case metaTagContentEncoding:
			m.ContentEncoding = string(v)
		case metaTagCacheControl:
			m.CacheControl = string(v)
		case metaTagUser:
			if len(v) < 2 || int(binary.LittleEndian.Uint16(v)) > len(v)-2 {
				return nil, fmt.Errorf("metadata extra field 0x%04x: user metadata record at byte %d: its key length does not fit its %d bytes", MetadataExtraID, at-n-3, n)
			}
			kn := int(binary.LittleEndian.Uint16(v))
			k := string(v[2 : 2+kn])
			if k == "" || strings.ContainsAny(k, "\x00\r\n") {
				return nil, fmt.Errorf("metadata extra field 0x%04x: user metadata key %q is not a header name", MetadataExtraID, k)
			}
			if m.User == nil {
				m.User = map[string]string{}
			}
			if _, dup := m.User[k]; dup {
				return nil, fmt.Errorf("metadata extra field 0x%04x: user metadata key %q twice", MetadataExtraID, k)
			}
			m.User[k] = string(v[2+kn:])
		}
	}
	return m, nil
}
