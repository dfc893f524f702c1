// Package manifest reads the list of objects to archive from CSV or JSON
// Lines: a key per line, and optionally the size, CRC-32, archive name,
// ETag and bucket of each.
//
// CSV may start with a header row naming the columns (key, size, crc32,
// name, etag, bucket, in any order); without one the columns are
// key,size,crc32,name,etag,bucket, trailing ones optional. JSON Lines have
// one object per line with those field names. A CRC-32 is 8 hex digits or
// the base64 of its 4 big-endian bytes, as S3 returns it.
//
// Keys and names are used exactly as written, spaces included (quote them
// in CSV to make the spaces visible); a key that names no object fails the
// run. Spaces around the other fields are ignored.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/s3zip/s3zip/plan"
)

// Line is one object of a manifest.
type Line struct {
	Key     string
	Bucket  string // "" means the request's default source bucket
	Name    string // "" means the name policy decides
	Size    int64  // -1 when the manifest does not say
	CRC32   plan.CRC
	ETag    string
	LineNum int
}

// Error names the manifest line that is wrong and why.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("manifest line %d: %s", e.Line, e.Msg) }

// MaxLineBytes bounds one manifest line.
const MaxLineBytes = 256 * 1024

// Parse reads a manifest, CSV or JSON Lines (told apart by the first
// non-blank byte: '{' means JSON Lines).
func Parse(r io.Reader) ([]Line, error) {
	br := bufio.NewReaderSize(r, 64*1024)
	// Look without consuming: a CSV key may itself begin with a space.
	head, err := br.Peek(br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return parseJSONLines(br)
	}
	return parseCSV(br)
}

var columns = []string{"key", "size", "crc32", "name", "etag", "bucket"}

func parseCSV(r io.Reader) ([]Line, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var out []Line
	index := map[string]int{"key": 0, "size": 1, "crc32": 2, "name": 3, "etag": 4, "bucket": 5}
	first := true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			var pe *csv.ParseError
			line := len(out) + 1
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return nil, &Error{line, err.Error()}
		}
		lineNum, _ := cr.FieldPos(0)
		if first {
			first = false
			if isHeader(rec) {
				index = map[string]int{}
				for i, f := range rec {
					col := strings.ToLower(strings.TrimSpace(f))
					if !contains(columns, col) {
						return nil, &Error{lineNum, fmt.Sprintf("unknown column %q (columns: %s)", f, strings.Join(columns, ", "))}
					}
					if _, dup := index[col]; dup {
						return nil, &Error{lineNum, fmt.Sprintf("column %q twice", col)}
					}
					index[col] = i
				}
				if _, ok := index["key"]; !ok {
					return nil, &Error{lineNum, "header has no key column"}
				}
				continue
			}
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		// Keys and names are taken exactly as written: an S3 key may start
		// or end with a space, and trimming it would archive another object
		// (or name an entry differently from what the manifest says).
		// Numbers, checksums, ETags and buckets cannot hold spaces, so
		// spaces around them are only layout.
		raw := func(col string) string {
			i, ok := index[col]
			if !ok || i >= len(rec) {
				return ""
			}
			return rec[i]
		}
		field := func(col string) string { return strings.TrimSpace(raw(col)) }
		l, err := rawLine{key: raw("key"), size: field("size"), crc32: field("crc32"), name: raw("name"), etag: field("etag"), bucket: field("bucket")}.parse(lineNum)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
}

func isHeader(rec []string) bool {
	for _, f := range rec {
		if strings.EqualFold(strings.TrimSpace(f), "key") {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

type jsonLine struct {
	Key    *string          `json:"key"`
	Size   *json.RawMessage `json:"size"`
	CRC32  string           `json:"crc32"`
	Name   string           `json:"name"`
	ETag   string           `json:"etag"`
	Bucket string           `json:"bucket"`
}

func parseJSONLines(r *bufio.Reader) ([]Line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLineBytes)
	var out []Line
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var j jsonLine
		if err := dec.Decode(&j); err != nil {
			return nil, &Error{n, fmt.Sprintf("not a JSON object with fields %s: %v", strings.Join(columns, ", "), err)}
		}
		if j.Key == nil {
			return nil, &Error{n, "no key"}
		}
		size := ""
		if j.Size != nil {
			size = strings.Trim(string(*j.Size), `"`)
		}
		l, err := rawLine{key: *j.Key, size: size, crc32: j.CRC32, name: j.Name, etag: j.ETag, bucket: j.Bucket}.parse(n)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &Error{len(out) + 1, fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
		}
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return out, nil
}

// rawLine is one line's columns as the manifest gives them, CSV or JSON
// Lines alike, before they are checked.
type rawLine struct {
	key, size, crc32, name, etag, bucket string
}

// parse checks w, the manifest's line n, and returns it as a Line.
func (w rawLine) parse(n int) (Line, error) {
	l := Line{Key: w.key, Name: w.name, ETag: w.etag, Bucket: w.bucket, Size: -1, LineNum: n}
	if w.key == "" {
		return l, &Error{n, "empty key"}
	}
	if w.size != "" && w.size != "null" {
		v, err := strconv.ParseInt(w.size, 10, 64)
		if err != nil {
			return l, &Error{n, fmt.Sprintf("size %q is not a whole number of bytes", w.size)}
		}
		if v < 0 {
			return l, &Error{n, fmt.Sprintf("negative size %d", v)}
		}
		l.Size = v
	}
	if w.crc32 != "" {
		v, err := ParseCRC(w.crc32)
		if err != nil {
			return l, &Error{n, err.Error()}
		}
		l.CRC32 = plan.KnownCRC(v)
	}
	return l, nil
}

// ParseCRC reads a CRC-32 as 8 hex digits or as S3's base64 of 4 bytes.
func ParseCRC(s string) (uint32, error) {
	if strings.HasSuffix(s, "=") {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 4 {
			return 0, fmt.Errorf("crc32 %q: not the base64 of 4 bytes", s)
		}
		return binary.BigEndian.Uint32(b), nil
	}
	v, err := plan.ParseHexCRC(strings.ToLower(s))
	if err != nil {
		return 0, fmt.Errorf("crc32 %q: want 8 hex digits or base64 as S3 gives it", s)
	}
	return v, nil
}
