// Package zipformat is the ZIP file format as s3zip writes and reads it
// (PKWARE APPNOTE 6.3): record signatures and fixed lengths, flag and
// attribute bits, the header encoders, MS-DOS and Unix times, and CRC-32
// combination. plan/ lays archives out and encodes their headers with it;
// archive/ reads and verifies them with it.
package zipformat

import "time"

// Signatures and fixed lengths of ZIP records (APPNOTE 4.3).
const (
	LocalHeaderSignature    = 0x04034b50
	CentralHeaderSignature  = 0x02014b50
	DataDescriptorSignature = 0x08074b50
	Zip64EndSignature       = 0x06064b50
	Zip64LocatorSignature   = 0x07064b50
	EndSignature            = 0x06054b50

	LocalHeaderLen   = 30
	CentralHeaderLen = 46
	Zip64EndLen      = 56 // fixed part, without the extensible data sector
	Zip64LocatorLen  = 20
	EndLen           = 22
	MaxCommentLen    = 0xFFFF

	// DataDescriptorMaxLen is the longest data descriptor: signature, CRC and
	// two 8-byte sizes (APPNOTE 4.3.9).
	DataDescriptorMaxLen = 24

	Zip64ExtraID       = 0x0001
	ExtTimeExtraID     = 0x5455
	ExtTimeExtraLen    = 4 + 5  // id, size, flags, mtime
	Zip64LocalExtraLen = 4 + 16 // id, size, both sizes

	FlagEncrypted      = 0x0001
	FlagDataDescriptor = 0x0008
	FlagUTF8           = 0x0800 // general purpose bit 11: name is UTF-8

	// MethodStore and MethodDeflate are the compression methods s3zip
	// writes and reads (APPNOTE 4.4.5).
	MethodStore   = 0
	MethodDeflate = 8

	VersionDefault = 20
	VersionZip64   = 45
	CreatorUnix    = 3 // high byte of "version made by"

	Uint16Max = 0xFFFF
	Uint32Max = 0xFFFFFFFF

	// MaxNameLen is the longest name a ZIP header can carry.
	MaxNameLen = Uint16Max

	// External attributes: Unix mode in the high 16 bits, MS-DOS attributes
	// in the low ones.
	UnixFileMode    = 0o100644
	UnixDirMode     = 0o040755
	UnixTypeMask    = 0o170000
	UnixPermMask    = 0o7777 // permissions, setuid, setgid, sticky
	UnixTypeFile    = 0o100000
	UnixTypeDir     = 0o040000
	UnixTypeSymlink = 0o120000
	UnixTypeFIFO    = 0o010000
	UnixTypeChar    = 0o020000
	UnixTypeBlock   = 0o060000
	UnixTypeSocket  = 0o140000
	MSDOSDirAttr    = 0x10
)

// NeedsZip64Sizes reports whether an entry's size overflows the 32-bit fields.
// 0xFFFFFFFF itself is the sentinel that sends readers to the ZIP64 field, so
// an entry of exactly that size needs ZIP64 too.
func NeedsZip64Sizes(size int64) bool { return size >= Uint32Max }

// NeedsZip64End reports whether the end of central directory overflows.
func NeedsZip64End(entries int, cdOffset, cdSize int64) bool {
	return entries >= Uint16Max || cdOffset >= Uint32Max || cdSize >= Uint32Max
}

// LocalHeaderSize is the length of the local header AppendLocalHeader writes
// for a name of nameLen bytes; zip64Sizes as Header.Zip64Sizes.
func LocalHeaderSize(nameLen int, zip64Sizes bool) int64 {
	n := int64(LocalHeaderLen + nameLen + ExtTimeExtraLen)
	if zip64Sizes {
		n += Zip64LocalExtraLen
	}
	return n
}

// CentralHeaderSize is the length of the central directory header
// AppendCentralHeader writes; extraLen is Header.CentralExtra's.
func CentralHeaderSize(nameLen, extraLen int, zip64Sizes bool, offset int64) int64 {
	return int64(CentralHeaderLen+nameLen+ExtTimeExtraLen+extraLen) + zip64CentralExtraLen(zip64Sizes, offset)
}

func zip64CentralExtraLen(zip64Sizes bool, offset int64) int64 {
	n := int64(0)
	if zip64Sizes {
		n += 16 // uncompressed and compressed size
	}
	if offset >= Uint32Max {
		n += 8
	}
	if n == 0 {
		return 0
	}
	return 4 + n
}

// EndRecordsSize is the length of the records after the central directory.
func EndRecordsSize(zip64 bool) int64 {
	if zip64 {
		return Zip64EndLen + Zip64LocatorLen + EndLen
	}
	return EndLen
}

// MSDOSTime converts t (taken as UTC) to MS-DOS date and time, clamped to the
// range the format can hold (1980-01-01 to 2107-12-31, 2-second steps).
func MSDOSTime(t time.Time) (date, clock uint16) {
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

// TimeFromMSDOS converts MS-DOS date and time fields, taken as UTC as s3zip
// writes them.
func TimeFromMSDOS(date, clock uint16) time.Time {
	return time.Date(
		int(date>>9)+1980, time.Month(date>>5&0xf), int(date&0x1f),
		int(clock>>11), int(clock>>5&0x3f), int(clock&0x1f)*2, 0, time.UTC)
}

// unixTime is the extended timestamp value: seconds since 1970 as the
// unsigned 32 bits readers take it as (good until 2106).
func unixTime(t time.Time) uint32 {
	s := t.Unix()
	if s < 0 {
		return 0
	}
	if s > Uint32Max {
		return Uint32Max
	}
	return uint32(s)
}
