package inventory

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
)

// csvColumns are the indexes of the fields a Record takes in a CSV row, -1
// for a field the report does not include.
type csvColumns struct {
	bucket, key, versionID, isLatest, isDeleteMarker, size, lastModified, eTag, checksumAlgorithm int
	own                                                                                           ownStrings
}

func csvColumnsOf(names []string) csvColumns {
	at := func(name string) int {
		for i, n := range names {
			if n == name {
				return i
			}
		}
		return -1
	}
	return csvColumns{
		bucket: at("bucket"), key: at("key"), versionID: at("versionid"),
		isLatest: at("islatest"), isDeleteMarker: at("isdeletemarker"), size: at("size"),
		lastModified: at("lastmodifieddate"), eTag: at("etag"), checksumAlgorithm: at("checksumalgorithm"),
	}
}

// csvFile reads one gzip-compressed CSV data file, checking its MD5 on the
// same read.
func (rd *reader) csvFile(ctx context.Context, f File, columns []string) error {
	rc, err := rd.open.Open(ctx, f.Key)
	if err != nil {
		return fmt.Errorf("inventory: open data file %q: %w", f.Key, err)
	}
	defer rc.Close()
	d := newDigest(rc)
	gz, err := gzip.NewReader(bufio.NewReaderSize(d, 256<<10))
	if err != nil {
		return fmt.Errorf("inventory file %q: not gzip-compressed CSV (%w); a CSV report's files end in .csv.gz", f.Key, err)
	}
	if err := rd.csv(ctx, f.Key, gz, columns); err != nil {
		return err
	}
	return d.check(f)
}

// csv reads an inventory's CSV rows (no header, columns in the order of
// the manifest's fileSchema) from r.
func (rd *reader) csv(ctx context.Context, file string, r io.Reader, columns []string) error {
	cols := csvColumnsOf(columns)
	cr := csv.NewReader(bufio.NewReaderSize(r, 256<<10))
	cr.FieldsPerRecord = len(columns)
	cr.ReuseRecord = true
	for row := int64(1); ; row++ {
		if row%rowsBetweenCancelChecks == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				err = fmt.Errorf("%d fields, the manifest's fileSchema has %d", len(fields), len(columns))
			}
			return &RowError{File: file, Row: row, Err: err}
		}
		rec, err := cols.record(fields)
		if err != nil {
			return &RowError{File: file, Row: row, Err: err}
		}
		if err := rd.take(rec); err != nil {
			return err
		}
	}
}

func (c *csvColumns) record(fields []string) (Record, error) {
	field := func(i int) string {
		if i < 0 {
			return ""
		}
		return fields[i]
	}
	r := Record{
		Bucket:            repeated(&c.own.bucket, field(c.bucket)),
		IsLatest:          true,
		ChecksumAlgorithm: repeated(&c.own.algorithm, field(c.checksumAlgorithm)),
	}
	if r.Bucket == "" {
		return r, errors.New("column Bucket is empty")
	}
	// S3 writes a CSV report's keys form-encoded: "a b+c" is "a+b%2Bc".
	key, err := url.QueryUnescape(field(c.key))
	if err != nil {
		return r, fmt.Errorf("column Key %q is not URL-encoded as S3 writes it: %v", field(c.key), err)
	}
	if key == "" {
		return r, errors.New("column Key is empty")
	}
	compact(&c.own, &r, key, field(c.versionID), field(c.eTag))
	if r.IsLatest, err = csvBool(field(c.isLatest), true); err != nil {
		return r, fmt.Errorf("column IsLatest %w", err)
	}
	if r.IsDeleteMarker, err = csvBool(field(c.isDeleteMarker), false); err != nil {
		return r, fmt.Errorf("column IsDeleteMarker %w", err)
	}
	switch s := field(c.size); {
	case s == "" && r.IsDeleteMarker: // a delete marker has no size
	case s == "":
		return r, fmt.Errorf("column Size is empty for key %q", key)
	default:
		if r.Size, err = strconv.ParseInt(s, 10, 64); err != nil || r.Size < 0 {
			return r, fmt.Errorf("column Size %q of key %q is not a byte count", s, key)
		}
	}
	if s := field(c.lastModified); s != "" {
		if r.LastModified, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return r, fmt.Errorf("column LastModifiedDate %q of key %q is not an ISO 8601 time as S3 writes it (2016-11-06T21:32:00.000Z)", s, key)
		}
	}
	return r, nil
}

// csvBool parses a boolean field; S3 leaves it empty where it does not apply.
func csvBool(s string, empty bool) (bool, error) {
	if s == "" {
		return empty, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", s)
	}
	return b, nil
}

// digest hashes the bytes of a data file as they are read, so that its MD5
// is checked without a second read.
type digest struct {
	r io.Reader
	h hash.Hash
}

func newDigest(r io.Reader) *digest { return &digest{r: r, h: md5.New()} }

func (d *digest) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.h.Write(p[:n])
	return n, err
}

// check reads what the parser left unread (a gzip trailer, padding) and
// compares the MD5 of all the bytes with the manifest's.
func (d *digest) check(f File) error {
	if _, err := io.Copy(io.Discard, d); err != nil {
		return fmt.Errorf("inventory: read data file %q: %w", f.Key, err)
	}
	if got := hex.EncodeToString(d.h.Sum(nil)); got != f.MD5Checksum {
		return &failure.ChecksumMismatchError{What: fmt.Sprintf("inventory file %q", f.Key), Algorithm: "MD5", Got: got, Source: "manifest.json", Want: f.MD5Checksum, Fix: readAgain}
	}
	return nil
}
