package inventory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// parquetRowsPerRead is how many rows are decoded at a time: enough to
// amortise the call, few enough that the buffer stays small.
const parquetRowsPerRead = 256

// parquetFile copies one Parquet data file to a temporary file (Parquet
// is read from its footer backwards, so it needs random access), checking its
// MD5 on the way, then reads its rows from there.
func (rd *reader) parquetFile(ctx context.Context, f File) error {
	rc, err := rd.open.Open(ctx, f.Key)
	if err != nil {
		return fmt.Errorf("inventory: open data file %q: %w", f.Key, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "s3zip-inventory-*.parquet")
	if err != nil {
		return fmt.Errorf("inventory file %q: a temporary copy is needed to read Parquet: %w", f.Key, err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	d := newDigest(rc)
	size, err := io.Copy(tmp, d)
	if err != nil {
		return fmt.Errorf("inventory: copy data file %q to %s: %w", f.Key, tmp.Name(), err)
	}
	if err := d.check(f); err != nil {
		return err
	}
	return rd.parquet(ctx, f.Key, tmp, size)
}

// parquet reads an inventory's Parquet rows from r, by the column names
// S3 writes, whatever their order in the file.
func (rd *reader) parquet(ctx context.Context, file string, r io.ReaderAt, size int64) error {
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("inventory file %q: not a Parquet file: %w", file, err)
	}
	cols, err := parquetColumnsOf(pf.Schema())
	if err != nil {
		return fmt.Errorf("inventory file %q: %w", file, err)
	}
	buf := make([]parquet.Row, parquetRowsPerRead)
	var row int64
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			if err := ctx.Err(); err != nil {
				rows.Close()
				return err
			}
			n, err := rows.ReadRows(buf)
			for _, values := range buf[:n] {
				row++
				rec, rerr := cols.record(values)
				if rerr != nil {
					rows.Close()
					return &RowError{File: file, Row: row, Err: rerr}
				}
				if yerr := rd.take(rec); yerr != nil {
					rows.Close()
					return yerr
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				return &RowError{File: file, Row: row + 1, Err: err}
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("inventory file %q: %w", file, err)
		}
	}
	return nil
}

// parquetColumns are the leaf column indexes of the fields a Record takes,
// -1 for a field the report does not include.
type parquetColumns struct {
	bucket, key, versionID, isLatest, isDeleteMarker, size, lastModified, eTag, checksumAlgorithm int
	// modifiedUnit is last_modified_date's unit: S3 writes TIMESTAMP_MILLIS.
	modifiedUnit time.Duration
	own          ownStrings
}

func parquetColumnsOf(schema *parquet.Schema) (*parquetColumns, error) {
	var errs []error
	at := func(name string, kind parquet.Kind, required bool) int {
		leaf, ok := schema.Lookup(name)
		switch {
		case !ok && required:
			errs = append(errs, fmt.Errorf("no %s column: the report cannot be archived without it (add Size to the inventory configuration's optional fields)", name))
			return -1
		case !ok:
			return -1
		case !leaf.Node.Leaf() || leaf.Node.Type().Kind() != kind || leaf.MaxRepetitionLevel > 0:
			errs = append(errs, fmt.Errorf("column %s is %s, S3 writes it as a single %s", name, leaf.Node.Type(), kind))
			return -1
		}
		return leaf.ColumnIndex
	}
	c := &parquetColumns{
		bucket:            at("bucket", parquet.ByteArray, true),
		key:               at("key", parquet.ByteArray, true),
		versionID:         at("version_id", parquet.ByteArray, false),
		isLatest:          at("is_latest", parquet.Boolean, false),
		isDeleteMarker:    at("is_delete_marker", parquet.Boolean, false),
		size:              at("size", parquet.Int64, true),
		lastModified:      at("last_modified_date", parquet.Int64, false),
		eTag:              at("e_tag", parquet.ByteArray, false),
		checksumAlgorithm: at("checksum_algorithm", parquet.ByteArray, false),
		modifiedUnit:      time.Millisecond,
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if leaf, ok := schema.Lookup("last_modified_date"); ok {
		c.modifiedUnit = timestampUnit(leaf.Node.Type())
	}
	return c, nil
}

// timestampUnit reads an int64 timestamp column's unit from its logical type
// (or its older converted type), milliseconds when it says none.
func timestampUnit(t parquet.Type) time.Duration {
	if lt := t.LogicalType(); lt != nil {
		if ts, ok := lt.Value.(*format.TimestampType); ok && ts.Unit.Value != nil {
			return ts.Unit.Value.Duration()
		}
	}
	if ct := t.ConvertedType(); ct != nil && *ct == deprecated.TimestampMicros {
		return time.Microsecond
	}
	return time.Millisecond
}

func (c *parquetColumns) record(row parquet.Row) (Record, error) {
	value := func(i int) (parquet.Value, bool) {
		if i < 0 {
			return parquet.Value{}, false
		}
		// A flat schema's row holds one value per leaf column, in column order.
		if i < len(row) && row[i].Column() == i {
			return row[i], !row[i].IsNull()
		}
		for _, v := range row {
			if v.Column() == i {
				return v, !v.IsNull()
			}
		}
		return parquet.Value{}, false
	}
	text := func(i int) []byte {
		if v, ok := value(i); ok {
			return v.ByteArray()
		}
		return nil
	}
	r := Record{
		Bucket:            repeated(&c.own.bucket, text(c.bucket)),
		IsLatest:          true,
		ChecksumAlgorithm: repeated(&c.own.algorithm, text(c.checksumAlgorithm)),
	}
	if r.Bucket == "" {
		return r, errors.New("column bucket is empty")
	}
	key := text(c.key)
	if len(key) == 0 {
		return r, errors.New("column key is empty")
	}
	compact(&c.own, &r, key, text(c.versionID), text(c.eTag))
	if v, ok := value(c.isLatest); ok {
		r.IsLatest = v.Boolean()
	}
	if v, ok := value(c.isDeleteMarker); ok {
		r.IsDeleteMarker = v.Boolean()
	}
	switch v, ok := value(c.size); {
	case ok:
		if r.Size = v.Int64(); r.Size < 0 {
			return r, fmt.Errorf("column size %d of key %q is negative", r.Size, r.Key)
		}
	case !r.IsDeleteMarker:
		return r, fmt.Errorf("column size is null for key %q", r.Key)
	}
	if v, ok := value(c.lastModified); ok {
		r.LastModified = time.Unix(0, v.Int64()*int64(c.modifiedUnit)).UTC()
	}
	return r, nil
}
