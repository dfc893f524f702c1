// Package plan lays out a ZIP archive of S3 objects byte for byte and cuts it
// into multipart-upload part jobs.
//
// It is pure: no AWS, no I/O. Given entries (name, source object, size,
// modification time, CRC-32 when known) and options, it decides the order of
// the entries in the archive, the offset of every local file header and of the
// central directory, whether ZIP64 records are needed, and the ordered list of
// parts a multipart upload is assembled from. Workers turn each part into bytes
// (upload) or into a server-side ranged copy (copy); the finalizer builds the
// last part, which carries the central directory. The arithmetic of a part's
// bytes (segments, CRC-32 probes, chain rounds) is internal/partwork's: plan
// prices parts with it, and workers build them with it.
//
// The archive format follows PKWARE's APPNOTE.TXT 6.3.10:
//   - entries are STORED (method 0), names are UTF-8 with general purpose bit 11,
//     and every local header carries the CRC-32 and both sizes: no data
//     descriptors (bit 3), which Java's ZipInputStream rejects for STORED entries;
//   - ZIP64 (4.5.3) is used exactly where a field overflows: an entry of
//     0xFFFFFFFF bytes or more carries a ZIP64 extra field with both sizes in its
//     local header; a central directory header carries, in order, whichever of
//     the uncompressed size, compressed size and local header offset overflowed;
//     the ZIP64 end of central directory record and locator (4.3.14, 4.3.15)
//     precede the end record when the entry count, directory size or directory
//     offset overflow, and the end record then holds sentinel values;
//   - times are MS-DOS times plus the extended timestamp extra field 0x5455.
package plan
