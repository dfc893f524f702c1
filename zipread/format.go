package zipread

import (
	"encoding/binary"
	"io/fs"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// The ZIP format's constants and encoders are internal/zipformat.

// MethodStore and MethodDeflate are the compression methods s3zip reads.
const (
	MethodStore   = zipformat.MethodStore
	MethodDeflate = zipformat.MethodDeflate
)

// readBuf consumes little-endian fields from a byte slice.
type readBuf []byte

func (b *readBuf) u8() uint8   { v := (*b)[0]; *b = (*b)[1:]; return v }
func (b *readBuf) u16() uint16 { v := binary.LittleEndian.Uint16(*b); *b = (*b)[2:]; return v }
func (b *readBuf) u32() uint32 { v := binary.LittleEndian.Uint32(*b); *b = (*b)[4:]; return v }
func (b *readBuf) u64() uint64 { v := binary.LittleEndian.Uint64(*b); *b = (*b)[8:]; return v }
func (b *readBuf) sub(n int) readBuf {
	s := (*b)[:n]
	*b = (*b)[n:]
	return s
}

// extraFields splits an extra field block into its records of id and data.
// A truncated trailing record is returned as ok=false.
func extraFields(extra []byte, fn func(id uint16, data readBuf)) (ok bool) {
	b := readBuf(extra)
	for len(b) >= 4 {
		id, n := b.u16(), int(b.u16())
		if n > len(b) {
			return false
		}
		fn(id, b.sub(n))
	}
	return len(b) == 0
}

// fileMode derives an entry's mode from its external attributes, as the
// creator system in the high byte of "version made by" defines them.
func fileMode(versionMadeBy uint16, external uint32, name string) fs.FileMode {
	var mode fs.FileMode
	if versionMadeBy>>8 == zipformat.CreatorUnix && external>>16 != 0 {
		unix := external >> 16
		mode = fs.FileMode(unix & 0o777)
		switch unix & zipformat.UnixTypeMask {
		case zipformat.UnixTypeDir:
			mode |= fs.ModeDir
		case zipformat.UnixTypeSymlink:
			mode |= fs.ModeSymlink
		case zipformat.UnixTypeFIFO:
			mode |= fs.ModeNamedPipe
		case zipformat.UnixTypeChar:
			mode |= fs.ModeDevice | fs.ModeCharDevice
		case zipformat.UnixTypeBlock:
			mode |= fs.ModeDevice
		case zipformat.UnixTypeSocket:
			mode |= fs.ModeSocket
		}
	} else {
		mode = 0o644
		if external&zipformat.MSDOSDirAttr != 0 {
			mode = fs.ModeDir | 0o755
		}
	}
	if len(name) > 0 && name[len(name)-1] == '/' {
		mode |= fs.ModeDir
		if mode.Perm() == 0 {
			mode |= 0o755
		}
	}
	return mode
}

// localHeader is a parsed local file header, APPNOTE 4.3.7.
type localHeader struct {
	version, flags, method uint16
	clock, date            uint16
	crc                    uint32
	csize32, usize32       uint32
	csize, usize           uint64 // after the ZIP64 extra field, when there is one
	name                   string
	zip64                  bool // a ZIP64 extra field is present
	zip64Both              bool // ... and it carries both sizes
	extraOK                bool
	length                 int64 // of the whole header: fixed part, name, extra
}

// parseLocalFixed parses the fixed 30 bytes and returns the name and extra lengths.
func parseLocalFixed(b readBuf, h *localHeader) (nameLen, extraLen int, sigOK bool) {
	if b.u32() != zipformat.LocalHeaderSignature {
		return 0, 0, false
	}
	h.version = b.u16()
	h.flags = b.u16()
	h.method = b.u16()
	h.clock = b.u16()
	h.date = b.u16()
	h.crc = b.u32()
	h.csize32 = b.u32()
	h.usize32 = b.u32()
	nameLen, extraLen = int(b.u16()), int(b.u16())
	h.csize, h.usize = uint64(h.csize32), uint64(h.usize32)
	h.length = int64(zipformat.LocalHeaderLen + nameLen + extraLen)
	return nameLen, extraLen, true
}

// parseLocalVariable parses the name and extra field that follow the fixed part.
func parseLocalVariable(name, extra []byte, h *localHeader) {
	h.name = string(name)
	h.extraOK = extraFields(extra, func(id uint16, d readBuf) {
		if id != zipformat.Zip64ExtraID {
			return
		}
		h.zip64 = true
		// APPNOTE 4.5.3 says a local header's ZIP64 field holds both sizes.
		if len(d) >= 16 {
			h.zip64Both = true
			h.usize, h.csize = d.u64(), d.u64()
		}
	})
}
