package zipformat

import (
	"encoding/binary"
	"time"
)

// Header is what an entry's local and central headers say.
type Header struct {
	Name             string
	Method           uint16
	ModTime          time.Time
	CRC32            uint32 // of the uncompressed data
	CompressedSize   int64  // bytes the archive holds
	UncompressedSize int64
	Offset           int64 // of the local header; central header only
	Dir              bool  // central header only: directory attributes
	// Mode is the Unix permission bits (0 is the default, 0644 or 0755 for
	// a directory); the type bits are the header's: a file or a directory.
	// Central header only.
	Mode uint32
	// CentralExtra is further extra fields, encoded (the metadata extra
	// field): central header only.
	CentralExtra string
}

// Zip64Sizes reports whether either size overflows the 32-bit header fields.
func (h *Header) Zip64Sizes() bool {
	return NeedsZip64Sizes(h.CompressedSize) || NeedsZip64Sizes(h.UncompressedSize)
}

type writeBuf []byte

func (b *writeBuf) u16(v uint16) { *b = binary.LittleEndian.AppendUint16(*b, v) }
func (b *writeBuf) u32(v uint32) { *b = binary.LittleEndian.AppendUint32(*b, v) }
func (b *writeBuf) u64(v uint64) { *b = binary.LittleEndian.AppendUint64(*b, v) }
func (b *writeBuf) str(s string) { *b = append(*b, s...) }

func (b *writeBuf) extTime(t time.Time) {
	b.u16(ExtTimeExtraID)
	b.u16(5)
	*b = append(*b, 1) // flags: modification time present
	b.u32(unixTime(t))
}

// AppendLocalHeader appends h's local file header to dst; it is
// LocalHeaderSize(len(h.Name), h.Zip64Sizes()) bytes long.
func AppendLocalHeader(dst []byte, h *Header) []byte {
	b := writeBuf(dst)
	date, clock := MSDOSTime(h.ModTime)
	zip64 := h.Zip64Sizes()
	version := uint16(VersionDefault)
	size32, raw32 := uint32(h.CompressedSize), uint32(h.UncompressedSize)
	if zip64 {
		version = VersionZip64
		size32, raw32 = Uint32Max, Uint32Max
	}
	extra := uint16(ExtTimeExtraLen)
	if zip64 {
		extra += Zip64LocalExtraLen
	}
	b.u32(LocalHeaderSignature)
	b.u16(version)
	b.u16(FlagUTF8)
	b.u16(h.Method)
	b.u16(clock)
	b.u16(date)
	b.u32(h.CRC32)
	b.u32(size32) // compressed
	b.u32(raw32)  // uncompressed
	b.u16(uint16(len(h.Name)))
	b.u16(extra)
	b.str(h.Name)
	if zip64 {
		// APPNOTE 4.5.3: in a local header the ZIP64 field carries both sizes.
		b.u16(Zip64ExtraID)
		b.u16(16)
		b.u64(uint64(h.UncompressedSize))
		b.u64(uint64(h.CompressedSize))
	}
	b.extTime(h.ModTime)
	return b
}

// AppendCentralHeader appends h's central directory header to dst; it is
// CentralHeaderSize(len(h.Name), len(h.CentralExtra), h.Zip64Sizes(),
// h.Offset) bytes long.
func AppendCentralHeader(dst []byte, h *Header) []byte {
	b := writeBuf(dst)
	date, clock := MSDOSTime(h.ModTime)
	sizeOver := h.Zip64Sizes()
	offsetOver := h.Offset >= Uint32Max
	version := uint16(VersionDefault)
	if sizeOver || offsetOver {
		version = VersionZip64
	}
	size32, raw32, offset32 := uint32(h.CompressedSize), uint32(h.UncompressedSize), uint32(h.Offset)
	if sizeOver {
		size32, raw32 = Uint32Max, Uint32Max
	}
	if offsetOver {
		offset32 = Uint32Max
	}
	zipExtra := zip64CentralExtraLen(sizeOver, h.Offset)
	mode, attr := uint32(UnixFileMode), uint32(0)
	if h.Dir {
		mode, attr = UnixDirMode, MSDOSDirAttr
	}
	if h.Mode != 0 {
		mode = mode&UnixTypeMask | h.Mode&UnixPermMask
	}
	b.u32(CentralHeaderSignature)
	b.u16(CreatorUnix<<8 | version)
	b.u16(version)
	b.u16(FlagUTF8)
	b.u16(h.Method)
	b.u16(clock)
	b.u16(date)
	b.u32(h.CRC32)
	b.u32(size32)
	b.u32(raw32)
	b.u16(uint16(len(h.Name)))
	b.u16(uint16(zipExtra + ExtTimeExtraLen + int64(len(h.CentralExtra))))
	b.u16(0) // comment length
	b.u16(0) // disk number start
	b.u16(0) // internal attributes
	b.u32(mode<<16 | attr)
	b.u32(offset32)
	b.str(h.Name)
	if zipExtra > 0 {
		// APPNOTE 4.5.3: only the fields that overflowed, in this order.
		b.u16(Zip64ExtraID)
		b.u16(uint16(zipExtra - 4))
		if sizeOver {
			b.u64(uint64(h.UncompressedSize))
			b.u64(uint64(h.CompressedSize))
		}
		if offsetOver {
			b.u64(uint64(h.Offset))
		}
	}
	b.extTime(h.ModTime)
	b.str(h.CentralExtra)
	return b
}

// AppendEndRecords appends the end of central directory record, preceded by
// the ZIP64 end record and locator when any field overflows; it is
// EndRecordsSize(NeedsZip64End(entries, cdOffset, cdSize)) bytes long.
func AppendEndRecords(dst []byte, entries int, cdOffset, cdSize int64) []byte {
	b := writeBuf(dst)
	count16, size32, offset32 := uint16(entries), uint32(cdSize), uint32(cdOffset)
	if NeedsZip64End(entries, cdOffset, cdSize) {
		zip64EndOffset := cdOffset + cdSize
		b.u32(Zip64EndSignature)
		b.u64(Zip64EndLen - 12) // size of the rest of the record
		b.u16(CreatorUnix<<8 | VersionZip64)
		b.u16(VersionZip64)
		b.u32(0) // this disk
		b.u32(0) // disk with the central directory
		b.u64(uint64(entries))
		b.u64(uint64(entries))
		b.u64(uint64(cdSize))
		b.u64(uint64(cdOffset))

		b.u32(Zip64LocatorSignature)
		b.u32(0) // disk with the ZIP64 end record
		b.u64(uint64(zip64EndOffset))
		b.u32(1) // total disks

		// Sentinels send readers to the ZIP64 record (APPNOTE 4.4.1.4).
		count16, size32, offset32 = Uint16Max, Uint32Max, Uint32Max
	}
	b.u32(EndSignature)
	b.u16(0) // this disk
	b.u16(0) // disk with the central directory
	b.u16(count16)
	b.u16(count16)
	b.u32(size32)
	b.u32(offset32)
	b.u16(0) // comment length
	return b
}
