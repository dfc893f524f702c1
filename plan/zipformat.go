package plan

import (
	"encoding/binary"
	"time"
)

// Signatures and fixed lengths of ZIP records (APPNOTE 4.3).
const (
	localHeaderSignature  = 0x04034b50
	centralHeaderSig      = 0x02014b50
	zip64EndSignature     = 0x06064b50
	zip64LocatorSignature = 0x07064b50
	endSignature          = 0x06054b50

	localHeaderLen   = 30
	centralHeaderLen = 46
	zip64EndLen      = 56
	zip64LocatorLen  = 20
	endLen           = 22

	zip64ExtraID     = 0x0001
	extTimeExtraID   = 0x5455
	extTimeExtraLen  = 4 + 5 // id, size, flags, mtime
	zip64LocalExtLen = 4 + 16

	flagUTF8 = 0x0800 // general purpose bit 11: name is UTF-8

	versionDefault = 20
	versionZip64   = 45
	creatorUnix    = 3

	uint16max = 0xFFFF
	uint32max = 0xFFFFFFFF

	// MaxNameLen is the longest name a ZIP header can carry.
	MaxNameLen = uint16max

	fileMode = 0o100644
	dirMode  = 0o040755
	msdosDir = 0x10
)

// needsZip64Sizes reports whether an entry's sizes overflow the 32-bit fields.
// 0xFFFFFFFF itself is the sentinel that sends readers to the ZIP64 field, so
// an entry of exactly that size needs ZIP64 too.
func needsZip64Sizes(size int64) bool { return size >= uint32max }

// localHeaderSize is the length of an entry's local header.
func localHeaderSize(e *Entry) int64 {
	n := int64(localHeaderLen + len(e.Name) + extTimeExtraLen)
	if e.zip64Sizes() {
		n += zip64LocalExtLen
	}
	return n
}

// centralHeaderSize is the length of an entry's central directory header.
func centralHeaderSize(e *PlacedEntry) int64 {
	return int64(centralHeaderLen+len(e.Name)+extTimeExtraLen) + zip64CentralExtraLen(e)
}

func zip64CentralExtraLen(e *PlacedEntry) int64 {
	n := int64(0)
	if e.zip64Sizes() {
		n += 16 // uncompressed and compressed size
	}
	if e.Offset >= uint32max {
		n += 8
	}
	if n == 0 {
		return 0
	}
	return 4 + n
}

// endRecordsSize is the length of the records after the central directory.
func endRecordsSize(zip64 bool) int64 {
	if zip64 {
		return zip64EndLen + zip64LocatorLen + endLen
	}
	return endLen
}

// needsZip64End reports whether the end of central directory overflows.
func needsZip64End(entries int, cdOffset, cdSize int64) bool {
	return entries >= uint16max || cdOffset >= uint32max || cdSize >= uint32max
}

// msDosTime converts t (taken as UTC) to MS-DOS date and time, clamped to the
// range the format can hold (1980-01-01 to 2107-12-31, 2-second steps).
func msDosTime(t time.Time) (date, clock uint16) {
	t = t.UTC()
	lo := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(2107, 12, 31, 23, 59, 58, 0, time.UTC)
	if t.Before(lo) {
		t = lo
	} else if t.After(hi) {
		t = hi
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	clock = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, clock
}

// unixTime is the extended timestamp value: seconds since 1970 as the
// unsigned 32 bits readers take it as (good until 2106).
func unixTime(t time.Time) uint32 {
	s := t.Unix()
	if s < 0 {
		return 0
	}
	if s > uint32max {
		return uint32max
	}
	return uint32(s)
}

type writeBuf []byte

func (b *writeBuf) u16(v uint16) { *b = binary.LittleEndian.AppendUint16(*b, v) }
func (b *writeBuf) u32(v uint32) { *b = binary.LittleEndian.AppendUint32(*b, v) }
func (b *writeBuf) u64(v uint64) { *b = binary.LittleEndian.AppendUint64(*b, v) }
func (b *writeBuf) str(s string) { *b = append(*b, s...) }

func (b *writeBuf) extTime(t time.Time) {
	b.u16(extTimeExtraID)
	b.u16(5)
	*b = append(*b, 1) // flags: modification time present
	b.u32(unixTime(t))
}

// AppendLocalHeader appends entry e's local file header, carrying crc, to dst.
// Its length is always e.HeaderLen.
func AppendLocalHeader(dst []byte, e *PlacedEntry, crc uint32) []byte {
	b := writeBuf(dst)
	date, clock := msDosTime(e.ModTime)
	zip64 := e.zip64Sizes()
	version := uint16(versionDefault)
	size32, raw32 := uint32(e.Size), uint32(e.UncompressedSize())
	if zip64 {
		version = versionZip64
		size32, raw32 = uint32max, uint32max
	}
	extra := uint16(extTimeExtraLen)
	if zip64 {
		extra += zip64LocalExtLen
	}
	b.u32(localHeaderSignature)
	b.u16(version)
	b.u16(flagUTF8)
	b.u16(e.Method)
	b.u16(clock)
	b.u16(date)
	b.u32(e.headerCRC(crc))
	b.u32(size32) // compressed
	b.u32(raw32)  // uncompressed
	b.u16(uint16(len(e.Name)))
	b.u16(extra)
	b.str(e.Name)
	if zip64 {
		// APPNOTE 4.5.3: in a local header the ZIP64 field carries both sizes.
		b.u16(zip64ExtraID)
		b.u16(16)
		b.u64(uint64(e.UncompressedSize()))
		b.u64(uint64(e.Size))
	}
	b.extTime(e.ModTime)
	return b
}

// AppendCentralHeader appends entry e's central directory header to dst.
func AppendCentralHeader(dst []byte, e *PlacedEntry, crc uint32) []byte {
	b := writeBuf(dst)
	date, clock := msDosTime(e.ModTime)
	sizeOver := e.zip64Sizes()
	offsetOver := e.Offset >= uint32max
	version := uint16(versionDefault)
	if sizeOver || offsetOver {
		version = versionZip64
	}
	size32, raw32, offset32 := uint32(e.Size), uint32(e.UncompressedSize()), uint32(e.Offset)
	if sizeOver {
		size32, raw32 = uint32max, uint32max
	}
	if offsetOver {
		offset32 = uint32max
	}
	zipExtra := zip64CentralExtraLen(e)
	mode, attr := uint32(fileMode), uint32(0)
	if e.Dir {
		mode, attr = dirMode, msdosDir
	}
	b.u32(centralHeaderSig)
	b.u16(creatorUnix<<8 | version)
	b.u16(version)
	b.u16(flagUTF8)
	b.u16(e.Method)
	b.u16(clock)
	b.u16(date)
	b.u32(e.headerCRC(crc))
	b.u32(size32)
	b.u32(raw32)
	b.u16(uint16(len(e.Name)))
	b.u16(uint16(zipExtra + extTimeExtraLen))
	b.u16(0) // comment length
	b.u16(0) // disk number start
	b.u16(0) // internal attributes
	b.u32(mode<<16 | attr)
	b.u32(offset32)
	b.str(e.Name)
	if zipExtra > 0 {
		// APPNOTE 4.5.3: only the fields that overflowed, in this order.
		b.u16(zip64ExtraID)
		b.u16(uint16(zipExtra - 4))
		if sizeOver {
			b.u64(uint64(e.UncompressedSize()))
			b.u64(uint64(e.Size))
		}
		if offsetOver {
			b.u64(uint64(e.Offset))
		}
	}
	b.extTime(e.ModTime)
	return b
}

// AppendEndRecords appends the end of central directory record, preceded by
// the ZIP64 end record and locator when any field overflows.
func AppendEndRecords(dst []byte, entries int, cdOffset, cdSize int64) []byte {
	b := writeBuf(dst)
	count16, size32, offset32 := uint16(entries), uint32(cdSize), uint32(cdOffset)
	if needsZip64End(entries, cdOffset, cdSize) {
		zip64EndOffset := cdOffset + cdSize
		b.u32(zip64EndSignature)
		b.u64(zip64EndLen - 12) // size of the rest of the record
		b.u16(creatorUnix<<8 | versionZip64)
		b.u16(versionZip64)
		b.u32(0) // this disk
		b.u32(0) // disk with the central directory
		b.u64(uint64(entries))
		b.u64(uint64(entries))
		b.u64(uint64(cdSize))
		b.u64(uint64(cdOffset))

		b.u32(zip64LocatorSignature)
		b.u32(0) // disk with the ZIP64 end record
		b.u64(uint64(zip64EndOffset))
		b.u32(1) // total disks

		// Sentinels send readers to the ZIP64 record (APPNOTE 4.4.1.4).
		count16, size32, offset32 = uint16max, uint32max, uint32max
	}
	b.u32(endSignature)
	b.u16(0) // this disk
	b.u16(0) // disk with the central directory
	b.u16(count16)
	b.u16(count16)
	b.u32(size32)
	b.u32(offset32)
	b.u16(0) // comment length
	return b
}
