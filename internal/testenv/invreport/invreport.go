// Package invreport writes S3 Inventory reports for tests, the way S3 writes
// them: gzip CSV without a header, every field quoted and keys form-encoded,
// or Parquet with S3's column names and types; a manifest.json naming the data
// files with their MD5s, and manifest.checksum (the manifest's MD5) beside it.
// The rows come from a real listing of the objects a test put, so the report
// describes the server's objects exactly (sizes, ETags, last-modified times).
package invreport

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/parquet-go/parquet-go"
)

// Row is one object of a report.
type Row struct {
	Bucket, Key       string
	Size              int64
	LastModified      time.Time
	ETag              string // without quotes, as reports give it
	ChecksumAlgorithm string
}

// Listed lists bucket under prefix: the rows a report of it would hold.
func Listed(tb testing.TB, c *s3.Client, bucket, prefix string) []Row {
	tb.Helper()
	var rows []Row
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			r := Row{Bucket: bucket, Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified).UTC(),
				ETag: strings.Trim(aws.ToString(o.ETag), `"`)}
			if len(o.ChecksumAlgorithm) > 0 {
				r.ChecksumAlgorithm = string(o.ChecksumAlgorithm[0])
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// Format is a report's fileFormat.
type Format string

const (
	CSV     Format = "CSV"
	Parquet Format = "Parquet"
)

// csvSchema and parquetSchema are the fileSchema of a report of current
// versions with the optional fields s3zip uses, as S3 writes them.
const (
	csvSchema     = "Bucket, Key, Size, LastModifiedDate, ETag, ChecksumAlgorithm"
	parquetSchema = "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional int64 size; optional int64 last_modified_date (TIMESTAMP_MILLIS); optional binary e_tag (UTF8); optional binary checksum_algorithm (UTF8);}"
)

// parquetRow has the columns and types of parquetSchema.
type parquetRow struct {
	Bucket            string  `parquet:"bucket"`
	Key               string  `parquet:"key"`
	Size              *int64  `parquet:"size,optional"`
	LastModifiedDate  *int64  `parquet:"last_modified_date,optional,timestamp(millisecond)"`
	ETag              *string `parquet:"e_tag,optional"`
	ChecksumAlgorithm *string `parquet:"checksum_algorithm,optional"`
}

// Report is a report's objects by key, to put into its destination bucket.
type Report struct {
	ManifestKey string
	DataKeys    []string
	Objects     map[string][]byte
}

// Build makes a report of rows, filesOf rows to a data file, under dir (a
// prefix ending in "/", as S3's "<source-bucket>/<config>/"), written to
// destBucket.
func Build(tb testing.TB, format Format, sourceBucket, destBucket, dir string, rows []Row, filesOf int) *Report {
	tb.Helper()
	r := &Report{ManifestKey: dir + "2026-11-24T00-00Z/manifest.json", Objects: map[string][]byte{}}
	schema := csvSchema
	if format == Parquet {
		schema = parquetSchema
	}
	var files []map[string]any
	for i := 0; i < len(rows); i += filesOf {
		chunk := rows[i:min(i+filesOf, len(rows))]
		var data []byte
		key := fmt.Sprintf("%sdata/%04d", dir, len(files))
		if format == Parquet {
			data, key = parquetFile(tb, chunk), key+".parquet"
		} else {
			data, key = csvFile(tb, chunk), key+".csv.gz"
		}
		r.Objects[key] = data
		r.DataKeys = append(r.DataKeys, key)
		files = append(files, map[string]any{"key": key, "size": len(data), "MD5checksum": md5Hex(data)})
	}
	manifest, err := json.Marshal(map[string]any{
		"sourceBucket":      sourceBucket,
		"destinationBucket": "arn:aws:s3:::" + destBucket,
		"version":           "2016-11-30",
		"creationTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"fileFormat":        string(format),
		"fileSchema":        schema,
		"files":             files,
	})
	if err != nil {
		tb.Fatal(err)
	}
	r.Objects[r.ManifestKey] = manifest
	r.Objects[strings.TrimSuffix(r.ManifestKey, "manifest.json")+"manifest.checksum"] = []byte(md5Hex(manifest) + "\n")
	return r
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func csvFile(tb testing.TB, rows []Row) []byte {
	var text strings.Builder
	for _, r := range rows {
		fields := []string{r.Bucket, url.QueryEscape(r.Key), strconv.FormatInt(r.Size, 10),
			r.LastModified.UTC().Format("2006-01-02T15:04:05.000Z"), r.ETag, r.ChecksumAlgorithm}
		for i, f := range fields {
			if i > 0 {
				text.WriteByte(',')
			}
			text.WriteString(`"` + strings.ReplaceAll(f, `"`, `""`) + `"`)
		}
		text.WriteByte('\n')
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(text.String())); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func parquetFile(tb testing.TB, rows []Row) []byte {
	out := make([]parquetRow, len(rows))
	for i, r := range rows {
		out[i] = parquetRow{Bucket: r.Bucket, Key: r.Key, Size: &r.Size, LastModifiedDate: aws.Int64(r.LastModified.UnixMilli()),
			ETag: aws.String(r.ETag), ChecksumAlgorithm: aws.String(r.ChecksumAlgorithm)}
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[parquetRow](&buf)
	if _, err := w.Write(out); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
