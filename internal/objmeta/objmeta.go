// Package objmeta is what s3zip reads from and writes to an S3 object's
// metadata beyond its bytes: the file mode and modification time that
// rclone and s3fs keep in user metadata, and the Content-Type an extracted
// object is served with.
//
// How the two tools write them (user metadata keys, so x-amz-meta-*):
//
//	s3fs    mtime  seconds since 1970, decimal integer ("1700000000")
//	        mode   st_mode in decimal, type bits included ("33188" = 0100644)
//	        uid, gid decimal
//	rclone  mtime  seconds since 1970 as a decimal fraction, to the
//	               nanosecond ("1700000000.123456789"): X-Amz-Meta-Mtime
//	        mode   st_mode in octal, type bits included ("100644"), with
//	               --metadata from a local file system
//	        uid, gid decimal
//
// A mode is read as s3fs's decimal when that gives one of the file types and
// no more than 16 bits (s3fs's always does), else as rclone's octal; one that is
// neither is ignored. RFC 3339 mtimes (rclone's metadata view, and older
// s3zip extracts) are read too.
package objmeta

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// MaxFieldBytes bounds the metadata extra field s3zip writes for an object
// (zipformat.AppendMetadataExtra) and reads back: S3 holds a request's
// headers to 8 KiB (user metadata to 2 KB of them), so S3's metadata always
// fits; the bound sizes what carries fields through Step Functions (the pin
// round's answers, extract's jobs).
const MaxFieldBytes = 8 << 10

// User metadata keys rclone and s3fs share.
const (
	KeyMtime = "mtime"
	KeyMode  = "mode"
)

// Mode is the Unix permission bits (setuid, setgid and sticky included) of
// the mode the user metadata gives, and whether it gives one. The type bits
// are dropped: an object is archived as a file (or a folder), never as the
// symbolic link or device its metadata may claim.
func Mode(user map[string]string) (uint32, bool) {
	v := strings.TrimSpace(user[KeyMode])
	if v == "" {
		return 0, false
	}
	if d, err := strconv.ParseUint(v, 10, 32); err == nil && d <= 0o177777 && fileType(uint32(d)) {
		return uint32(d) & zipformat.UnixPermMask, true
	}
	if o, err := strconv.ParseUint(v, 8, 32); err == nil && o <= 0o177777 {
		return uint32(o) & zipformat.UnixPermMask, true
	}
	return 0, false
}

// fileType reports whether mode's type bits name a type of file.
func fileType(mode uint32) bool {
	switch mode & zipformat.UnixTypeMask {
	case zipformat.UnixTypeFIFO, zipformat.UnixTypeChar, zipformat.UnixTypeDir, zipformat.UnixTypeBlock,
		zipformat.UnixTypeFile, zipformat.UnixTypeSymlink, zipformat.UnixTypeSocket:
		return true
	}
	return false
}

// ModTime is the modification time the user metadata gives, and whether it
// gives one: decimal seconds since 1970 with up to nine decimals (s3fs,
// rclone), or RFC 3339.
func ModTime(user map[string]string) (time.Time, bool) {
	v := strings.TrimSpace(user[KeyMtime])
	if v == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), true
	}
	secs, frac, _ := strings.Cut(v, ".")
	s, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || s < 0 || s > math.MaxInt64/1_000_000_000-1 {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		n, err := strconv.ParseUint(frac, 10, 32)
		if err != nil || strings.ContainsAny(frac, "+-") {
			return time.Time{}, false
		}
		ns = int64(n) * int64(math.Pow10(9-len(frac)))
	}
	return time.Unix(s, ns).UTC(), true
}

// FormatMtime is t as both tools read a user metadata mtime: whole seconds
// since 1970 (s3fs parses an integer; rclone a decimal fraction, which an
// integer is).
func FormatMtime(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
