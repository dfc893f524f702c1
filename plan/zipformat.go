package plan

import "github.com/s3zip/s3zip/internal/zipformat"

// internal/zipformat holds the ZIP format's records, signatures and sizes;
// these fit it to the plan's entries.

// localHeaderSize is the length of an entry's local header.
func localHeaderSize(e *Entry) int64 {
	return zipformat.LocalHeaderSize(len(e.Name), e.zip64Sizes())
}

// centralHeaderSize is the length of an entry's central directory header.
func centralHeaderSize(e *PlacedEntry) int64 {
	return zipformat.CentralHeaderSize(len(e.Name), len(e.Meta), e.zip64Sizes(), e.Offset)
}

// header is what e's headers say, carrying crc as the data's CRC.
func (e *PlacedEntry) header(crc uint32) *zipformat.Header {
	return &zipformat.Header{
		Name:             e.Name,
		Method:           e.Method,
		ModTime:          e.ModTime,
		CRC32:            e.headerCRC(crc),
		CompressedSize:   e.Size,
		UncompressedSize: e.UncompressedSize(),
		Offset:           e.Offset,
		Dir:              e.Dir,
		Mode:             e.Mode,
		CentralExtra:     string(e.Meta),
	}
}

// AppendLocalHeader appends entry e's local file header, carrying crc, to dst.
// Its length is always e.HeaderLen.
func AppendLocalHeader(dst []byte, e *PlacedEntry, crc uint32) []byte {
	return zipformat.AppendLocalHeader(dst, e.header(crc))
}

// appendCentralHeader appends entry e's central directory header to dst.
func appendCentralHeader(dst []byte, e *PlacedEntry, crc uint32) []byte {
	return zipformat.AppendCentralHeader(dst, e.header(crc))
}
