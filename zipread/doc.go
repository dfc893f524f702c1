// Package zipread reads ZIP archives stored as S3 objects without
// downloading them whole: Open reads the end records and the central
// directory with ranged GETs; Verify checks every record and every entry's
// CRC-32; Extract writes the entries to a directory.
//
// Records follow PKWARE's APPNOTE.TXT 6.3.10: end of central directory
// (4.3.16), ZIP64 end record and locator (4.3.14, 4.3.15), central directory
// headers (4.3.12), local file headers (4.3.7), the ZIP64 extended
// information extra field (4.5.3) and the extended timestamp (0x5455).
//
// Reads are bounded in concurrency and memory whatever the archive's size:
// neighbouring small entries are fetched together with one ranged GET of a
// few MiB, large STORED entries in parallel chunks whose CRC-32s are
// combined (zipformat.CombineCRC), and nothing but the entry list is held. Every
// GET carries If-Match with the ETag seen by Open, so an object replaced
// while it is being read fails loudly instead of mixing two archives.
package zipread
