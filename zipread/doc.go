// Package zipread reads ZIP archives stored as S3 objects without
// downloading them whole. Open reads the end records and the central
// directory with ranged GETs, Verify checks every record and every entry's
// CRC-32, and Extract writes the entries to a directory.
//
// Records follow PKWARE's APPNOTE.TXT 6.3.10. The end of central directory
// is section 4.3.16, the ZIP64 end record and locator 4.3.14 and 4.3.15,
// central directory headers 4.3.12, local file headers 4.3.7 and the ZIP64
// extended information extra field 4.5.3. The extended timestamp is extra
// field 0x5455.
//
// Reads are bounded in concurrency and memory whatever the archive's size.
// Neighbouring small entries are fetched together with one ranged GET of a
// few MiB, large STORED entries in parallel chunks whose CRC-32s
// zipformat.CombineCRC combines, and nothing but the entry list is held. Every
// GET carries If-Match with the ETag seen by Open, so an object replaced
// while it is being read fails loudly instead of mixing two archives.
package zipread
