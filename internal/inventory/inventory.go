// Package inventory reads an S3 Inventory report as a source of objects: the
// way S3 Batch Operations and s3tar take millions of keys without listing.
//
// A report is a manifest.json (with manifest.checksum, the MD5 of its bytes)
// naming data files in the inventory's destination bucket, each with its MD5.
// CSV files are gzip-compressed, have no header, hold the columns in the
// manifest's fileSchema order and URL-encode keys (form encoding: a space is
// "+", a "+" is "%2B"). Parquet files carry their own schema, with the column
// names S3 writes (bucket, key, version_id, is_latest, is_delete_marker, size,
// last_modified_date, e_tag, storage_class, …, checksum_algorithm). ORC is
// refused: S3 can write the same report as CSV or Parquet.
//
// Parquet is read with github.com/parquet-go/parquet-go: it is maintained (the
// community fork that took over segmentio/parquet-go), pure Go with no cgo (so
// the Lambda binaries stay static arm64 builds), and reads rows a page at a
// time, so a report of any size is read in bounded memory. Parquet needs random
// access (its footer is at the end), so each Parquet file is copied to a
// temporary file as it streams in; its MD5 is checked on that one read.
//
// Records are yielded one at a time, one data file at a time: 10 M rows never
// sit in memory at once. Delete markers and non-latest versions are skipped and
// counted in the Summary. The package does no AWS calls: the caller opens
// objects by key through an Opener.
package inventory

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Opener opens an object of the inventory's destination bucket (the bucket
// manifest.json and the data files are in) by key. An object that does not
// exist must give an error that errors.Is(err, fs.ErrNotExist), so that an
// absent manifest.checksum can be told from a failed read.
type Opener interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// OpenFunc lets a function serve as an Opener.
type OpenFunc func(ctx context.Context, key string) (io.ReadCloser, error)

// Open calls f.
func (f OpenFunc) Open(ctx context.Context, key string) (io.ReadCloser, error) { return f(ctx, key) }

// Record is one latest, live object of the inventory.
//
// Key, VersionID and ETag share one allocation of their own (Bucket and
// ChecksumAlgorithm are shared by the rows that repeat them): a kept Record
// holds nothing else of its row, so keeping millions costs what their text
// costs.
type Record struct {
	Bucket            string
	Key               string // decoded: the object's key as S3 has it
	VersionID         string // "" when the report lists current versions only
	IsLatest          bool   // always true in what is yielded; kept so a record says what it is
	IsDeleteMarker    bool   // always false in what is yielded
	Size              int64
	LastModified      time.Time // zero when the report does not include it
	ETag              string    // as S3 reports it, without quotes; "" when not included
	ChecksumAlgorithm string    // e.g. "CRC32", "CRC64NVME"; "" when none or not included
}

// Summary counts what a Read saw.
type Summary struct {
	Files         int   // data files read
	Rows          int64 // rows read, all kinds
	Objects       int64 // records yielded
	Bytes         int64 // sum of the yielded records' sizes
	DeleteMarkers int64 // rows skipped because they are delete markers
	NonLatest     int64 // rows skipped because they are not the object's latest version
}

func (s Summary) String() string {
	return fmt.Sprintf("inventory: %d files, %d rows: %d objects, %d bytes; skipped %d delete markers and %d non-latest versions",
		s.Files, s.Rows, s.Objects, s.Bytes, s.DeleteMarkers, s.NonLatest)
}

// RowError names the data file and the row (1-based) that is malformed.
type RowError struct {
	File string
	Row  int64
	Err  error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("inventory file %q row %d: %v", e.File, e.Row, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// readAgain is what to do about an inventory file whose MD5 is not the
// report's.
const readAgain = "it is corrupt or was rewritten while read; read it again, or use the next report"

// rowsBetweenCancelChecks bounds how long a canceled context goes unnoticed
// without paying for a check on every row.
const rowsBetweenCancelChecks = 4096

// Read reads every data file of m, in the manifest's order, and calls yield
// with each latest, live object. A yield error stops the read and is returned
// as is.
//
// A CSV file's MD5 can only be checked once the file has been read to its
// end, after its rows were yielded: a Read that returns an error may have
// yielded rows of a corrupt file, so treat what was yielded as usable only
// when Read returns nil.
//
// A Parquet file is copied to os.TempDir (on Lambda, /tmp) while it is read:
// Read needs the disk space of the largest Parquet data file, one at a time.
func Read(ctx context.Context, open Opener, m *Manifest, yield func(Record) error) (Summary, error) {
	if m.Format != FormatCSV && m.Format != FormatParquet {
		return Summary{}, fmt.Errorf("inventory: manifest of format %q (fileFormat %q) cannot be read: get the manifest from ReadManifest or ParseManifest", m.Format, m.FileFormat)
	}
	columns, err := schemaColumns(m.Format, m.FileSchema)
	if err != nil {
		return Summary{}, err
	}
	rd := &reader{open: open, yield: yield}
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return rd.sum, err
		}
		if m.Format == FormatCSV {
			err = rd.csvFile(ctx, f, columns)
		} else {
			err = rd.parquetFile(ctx, f)
		}
		if err != nil {
			return rd.sum, err
		}
		rd.sum.Files++
	}
	return rd.sum, nil
}

// reader is one Read under way: where its data files come from, what it has
// counted so far, and the caller's yield, which takes the records it keeps.
type reader struct {
	open  Opener
	yield func(Record) error
	sum   Summary
}

// take counts a row's record and yields it when it is an object to archive.
func (rd *reader) take(rec Record) error {
	if !rd.sum.keep(&rec) {
		return nil
	}
	return rd.yield(rec)
}

// keep counts a row and says whether it is yielded: delete markers and
// versions that are not the latest are not objects to archive.
func (s *Summary) keep(r *Record) bool {
	s.Rows++
	switch {
	case r.IsDeleteMarker:
		s.DeleteMarkers++
		return false
	case !r.IsLatest:
		s.NonLatest++
		return false
	}
	s.Objects++
	s.Bytes += r.Size
	return true
}

// ownStrings gives records strings that hold no other bytes of the row they
// were read from.
type ownStrings struct {
	buf               []byte // scratch, reused from row to row
	bucket, algorithm string // the last seen: a report's rows repeat a few
}

// repeated returns last, or b as a new last when it differs: strings that
// rows repeat cost one allocation per change, not one per row.
func repeated[T string | []byte](last *string, b T) string {
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}

// compact gives a record's per-row strings one allocation of their own.
func compact[T string | []byte](o *ownStrings, r *Record, key, versionID, eTag T) {
	o.buf = append(append(append(o.buf[:0], key...), versionID...), eTag...)
	s := string(o.buf)
	k, v := len(key), len(versionID)
	r.Key, r.VersionID, r.ETag = s[:k], s[k:k+v], s[k+v:]
}
