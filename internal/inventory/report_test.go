package inventory

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// This file builds inventory reports the way S3 writes them, in memory, for
// the tests: gzip CSV without a header and every field quoted, Parquet with
// S3's column names and types, a manifest.json naming the files with their
// MD5s and a manifest.checksum beside it.

// csvSchema is the fileSchema of a CSV report of all versions with the
// optional fields s3zip uses, in the order S3 writes them.
const csvSchema = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded, ChecksumAlgorithm"

// parquetSchema is that report's fileSchema in Parquet, as S3 writes it.
const parquetSchema = "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional binary version_id (UTF8); optional boolean is_latest; optional boolean is_delete_marker; optional int64 size; optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); optional binary storage_class (UTF8); optional boolean is_multipart_uploaded; optional binary checksum_algorithm (UTF8);}"

// store is an in-memory destination bucket.
type store map[string][]byte

func (s store) Open(_ context.Context, key string) (io.ReadCloser, error) {
	b, ok := s[key]
	if !ok {
		return nil, fmt.Errorf("object %q: %w", key, fs.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// csvRow is a row as S3 writes it: every field quoted, the key already
// URL-encoded by the caller.
func csvRow(fields ...string) string {
	q := make([]string, len(fields))
	for i, f := range fields {
		q[i] = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
	}
	return strings.Join(q, ",") + "\n"
}

func gzipped(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// s3ParquetRow has the columns and types of the Parquet files S3 writes
// (parquetSchema).
type s3ParquetRow struct {
	Bucket              string  `parquet:"bucket"`
	Key                 string  `parquet:"key"`
	VersionID           *string `parquet:"version_id,optional"`
	IsLatest            *bool   `parquet:"is_latest,optional"`
	IsDeleteMarker      *bool   `parquet:"is_delete_marker,optional"`
	Size                *int64  `parquet:"size,optional"`
	LastModifiedDate    *int64  `parquet:"last_modified_date,optional,timestamp(millisecond)"`
	ETag                *string `parquet:"e_tag,optional"`
	StorageClass        *string `parquet:"storage_class,optional"`
	IsMultipartUploaded *bool   `parquet:"is_multipart_uploaded,optional"`
	ChecksumAlgorithm   *string `parquet:"checksum_algorithm,optional"`
}

func ptr[T any](v T) *T { return &v }

func parquetFile[T any](t testing.TB, rows []T, options ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, options...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// report puts data files and their manifest into a store and returns the
// manifest's key.
func report(t testing.TB, s store, format, schema string, files ...[]byte) string {
	t.Helper()
	const dir = "inv/src-bucket/cfg/2026-11-24T00-00Z/"
	m := map[string]any{
		"sourceBucket":      "src-bucket",
		"destinationBucket": "arn:aws:s3:::inv-bucket",
		"version":           "2016-11-30",
		"creationTimestamp": "1763942400000",
		"fileFormat":        format,
		"fileSchema":        schema,
	}
	var list []map[string]any
	for i, f := range files {
		key := fmt.Sprintf("inv/src-bucket/cfg/data/file-%d", i)
		s[key] = f
		list = append(list, map[string]any{"key": key, "size": len(f), "MD5checksum": md5Hex(f)})
	}
	m["files"] = list
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s[dir+"manifest.json"] = data
	s[dir+"manifest.checksum"] = []byte(md5Hex(data) + "\n")
	return dir + "manifest.json"
}

// readAllRecords reads a whole report.
func readAllRecords(t testing.TB, s store, manifestKey string) ([]Record, Summary, error) {
	t.Helper()
	m, err := ReadManifest(context.Background(), s, manifestKey)
	if err != nil {
		t.Fatalf("ReadManifest: %v", err)
	}
	var got []Record
	sum, err := Read(context.Background(), s, m, func(r Record) error {
		got = append(got, r)
		return nil
	})
	return got, sum, err
}

var modified = time.Date(2026, 11, 23, 21, 32, 7, 123e6, time.UTC)

// failed checks err against a case's wantErr ("" means none) and says
// whether the case was one of failure.
func failed(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("err = %v, want one containing %q", err, wantErr)
	}
	return true
}
