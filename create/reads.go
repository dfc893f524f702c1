package create

import "github.com/s3zip/s3zip/plan"

// ReadJob is one piece of one entry to read and compress, or a lookup as
// Lookup and lookup.go describe. Fields a job has no use for are left out of
// its JSON, because a read round of a million lookups is a million of them.
type ReadJob struct {
	Entry  int         `json:"entry"` // index in the read round's entries
	Piece  int         `json:"piece,omitempty"`
	Pieces int         `json:"pieces,omitempty"`
	Source plan.Source `json:"source"`
	Offset int64       `json:"offset,omitempty"`
	Length int64       `json:"length,omitempty"` // for LookupCRC, the planned size
	Level  int         `json:"level,omitempty"`
	Auto   bool        `json:"auto,omitempty"`
	// SHA256 asks for the piece's SHA-256. SHA-256 does not combine, so only
	// a one-piece job or a Hash job computes it, for the whole object.
	SHA256 bool `json:"sha256,omitempty"`
	// Hash marks a job that reads a whole object for its SHA-256 and CRC-32
	// only, compressing and writing nothing.
	Hash bool `json:"hash,omitempty"`
	// Bucket and Key name the intermediate object the compressed piece goes
	// to. For LookupCRC they name the key its batch's probe upload is named
	// after.
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	// Lookup is LookupPin or LookupCRC for a job that looks Source up
	// instead of reading it into the work prefix.
	Lookup string `json:"lookup,omitempty"`
	// Line is a LookupPin object's manifest line, for the problems the
	// planner lists.
	Line int `json:"line,omitempty"`
	// KeepMetadata makes a LookupPin answer the object's metadata extra
	// field too, for options.keepMetadata.
	KeepMetadata bool `json:"keepMetadata,omitempty"`
	// Stored is what S3 stores of Source's CRC-32 when the listing, the
	// inventory or the pin said, StoredNone or StoredComposite, for
	// LookupCRC.
	Stored string `json:"stored,omitempty"`
}

// ReadResult is what a read job learned.
type ReadResult struct {
	Entry int `json:"entry"`
	Piece int `json:"piece,omitempty"`
	// RawCRC32 is the CRC-32 of the piece's bytes as read.
	RawCRC32 plan.CRC `json:"rawCrc32,omitzero"`
	// Stored says auto found the piece not worth compressing, or it grew, so
	// no intermediate object was written.
	Stored bool `json:"stored,omitempty"`
	// Size and CRC32 describe the compressed piece.
	Size  int64    `json:"size,omitempty"`
	CRC32 plan.CRC `json:"crc32,omitzero"`
	// SHA256 is the bytes' SHA-256 in hex, when the job asked for it.
	SHA256 string `json:"sha256,omitempty"`
	// Object is what a lookup learned.
	Object *Looked `json:"object,omitempty"`
}

// compressedExtensions are formats that are compressed already, which auto
// stores without reading.
var compressedExtensions = map[string]bool{
	".zip": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true, ".rar": true, ".lz4": true, ".br": true,
	".jpg": true, ".jpeg": true, ".png": true, ".gif": true, ".webp": true, ".heic": true, ".avif": true,
	".mp3": true, ".aac": true, ".ogg": true, ".opus": true, ".flac": true, ".m4a": true,
	".mp4": true, ".m4v": true, ".mov": true, ".mkv": true, ".webm": true, ".avi": true,
	".pdf": true, ".docx": true, ".xlsx": true, ".pptx": true, ".jar": true, ".apk": true, ".parquet": true, ".orc": true,
}
