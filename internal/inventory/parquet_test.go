package inventory

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

func TestReadParquet(t *testing.T) {
	ms := modified.UnixMilli()
	live := func(key string, size int64) s3ParquetRow {
		return s3ParquetRow{Bucket: "src-bucket", Key: key, VersionID: ptr("v1"), IsLatest: ptr(true), IsDeleteMarker: ptr(false),
			Size: ptr(size), LastModifiedDate: ptr(ms), ETag: ptr("e131b86632dda753aac4018f72192b83"),
			StorageClass: ptr("STANDARD"), IsMultipartUploaded: ptr(false), ChecksumAlgorithm: ptr("CRC64NVME")}
	}
	many := make([]s3ParquetRow, 1000)
	for i := range many {
		many[i] = live(fmt.Sprintf("k/%04d", i), int64(i))
	}
	// A report of current versions only (no version_id, is_latest,
	// is_delete_marker), its columns in another order than S3's (a Group's
	// are sorted by name: bucket, checksum_algorithm, e_tag, key, size): what
	// is read goes by the column names, not their places.
	currentOnly := parquet.NewSchema("s3.inventory", parquet.Group{
		"bucket":             parquet.String(),
		"key":                parquet.String(),
		"size":               parquet.Optional(parquet.Leaf(parquet.Int64Type)),
		"e_tag":              parquet.Optional(parquet.String()),
		"checksum_algorithm": parquet.Optional(parquet.String()),
	})
	// Another writer's report may keep times in microseconds: the unit is
	// read from the column's type.
	micros := parquet.NewSchema("s3.inventory", parquet.Group{
		"bucket":             parquet.String(),
		"key":                parquet.String(),
		"size":               parquet.Optional(parquet.Leaf(parquet.Int64Type)),
		"last_modified_date": parquet.Optional(parquet.Timestamp(parquet.Microsecond)),
	})
	cases := []struct {
		name string
		file []byte
		want []Record
		sum  Summary
	}{
		{
			name: "fields",
			file: parquetFile(t, []s3ParquetRow{live("photos/a.jpg", 6223)}),
			want: []Record{{Bucket: "src-bucket", Key: "photos/a.jpg", VersionID: "v1", IsLatest: true, Size: 6223,
				LastModified: modified, ETag: "e131b86632dda753aac4018f72192b83", ChecksumAlgorithm: "CRC64NVME"}},
			sum: Summary{Files: 1, Rows: 1, Objects: 1, Bytes: 6223},
		},
		{
			// Only a CSV report URL-encodes keys: Parquet's are the keys.
			name: "keys-as-they-are",
			file: parquetFile(t, []s3ParquetRow{live("my photos/a+b.jpg", 1), live("café/日本語 😀.txt", 2), live("a%2Bb", 3)}),
			want: []Record{{Key: "my photos/a+b.jpg", Size: 1}, {Key: "café/日本語 😀.txt", Size: 2}, {Key: "a%2Bb", Size: 3}},
			sum:  Summary{Files: 1, Rows: 3, Objects: 3, Bytes: 6},
		},
		{
			name: "versions-and-delete-markers-skipped",
			file: parquetFile(t, []s3ParquetRow{
				{Bucket: "src-bucket", Key: "a", VersionID: ptr("v3"), IsLatest: ptr(true), IsDeleteMarker: ptr(true), LastModifiedDate: ptr(ms)},
				func() s3ParquetRow { r := live("a", 10); r.IsLatest = ptr(false); return r }(),
				live("b", 20),
				{Bucket: "src-bucket", Key: "c", VersionID: ptr("v9"), IsLatest: ptr(false), IsDeleteMarker: ptr(true)},
			}, parquet.MaxRowsPerRowGroup(2)),
			want: []Record{{Key: "b", Size: 20}},
			sum:  Summary{Files: 1, Rows: 4, Objects: 1, Bytes: 20, DeleteMarkers: 2, NonLatest: 1},
		},
		{
			name: "many-rows-in-row-groups",
			file: parquetFile(t, many, parquet.MaxRowsPerRowGroup(300)),
			want: []Record{{Key: "k/0000", Size: 0}, {Key: "k/0999", Size: 999}},
			sum:  Summary{Files: 1, Rows: 1000, Objects: 1000, Bytes: 999 * 1000 / 2},
		},
		{
			name: "current-versions-only-by-name",
			file: parquetFile(t, []s3ParquetRow{{Bucket: "src-bucket", Key: "k", Size: ptr[int64](7), ETag: ptr("abc"), ChecksumAlgorithm: ptr("SHA256")}}, currentOnly),
			want: []Record{{Bucket: "src-bucket", Key: "k", IsLatest: true, Size: 7, ETag: "abc", ChecksumAlgorithm: "SHA256"}},
			sum:  Summary{Files: 1, Rows: 1, Objects: 1, Bytes: 7},
		},
		{
			name: "timestamp-in-microseconds",
			file: parquetFile(t, []s3ParquetRow{{Bucket: "src-bucket", Key: "k", Size: ptr[int64](7), LastModifiedDate: ptr(modified.UnixMicro())}}, micros),
			want: []Record{{Bucket: "src-bucket", Key: "k", IsLatest: true, Size: 7, LastModified: modified}},
			sum:  Summary{Files: 1, Rows: 1, Objects: 1, Bytes: 7},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store{}
			got, sum, err := readAllRecords(t, s, report(t, s, "Parquet", parquetSchema, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if sum != c.sum {
				t.Errorf("summary = %+v, want %+v", sum, c.sum)
			}
			if int64(len(got)) != sum.Objects {
				t.Fatalf("got %d records, summary says %d", len(got), sum.Objects)
			}
			// With many rows, want holds the first and the last.
			pick := map[int]int{}
			for i := range c.want {
				pick[i] = i
			}
			if len(got) != len(c.want) {
				pick = map[int]int{0: 0, 1: len(got) - 1}
			}
			for i, w := range c.want {
				g := got[pick[i]]
				if g.Key != w.Key || g.Size != w.Size {
					t.Errorf("record %d = %q %d, want %q %d", pick[i], g.Key, g.Size, w.Key, w.Size)
				}
				if w.Bucket != "" && g != w {
					t.Errorf("record %d = %+v, want %+v", pick[i], g, w)
				}
			}
		})
	}
}

func TestReadParquetRejects(t *testing.T) {
	type noSize struct {
		Bucket string `parquet:"bucket"`
		Key    string `parquet:"key"`
	}
	type sizeAsText struct {
		Bucket string `parquet:"bucket"`
		Key    string `parquet:"key"`
		Size   string `parquet:"size"`
	}
	cases := []struct {
		name    string
		file    []byte
		wantRow int64 // 0: not a row's fault
		wantErr string
	}{
		{"no-size-column", parquetFile(t, []noSize{{"src-bucket", "k"}}), 0, "no size column"},
		{"size-not-int64", parquetFile(t, []sizeAsText{{"src-bucket", "k", "12"}}), 0, "column size is STRING, S3 writes it as a single INT64"},
		{"size-null-for-an-object", parquetFile(t, []s3ParquetRow{
			{Bucket: "src-bucket", Key: "a", Size: ptr[int64](1)},
			{Bucket: "src-bucket", Key: "b", IsLatest: ptr(true)},
		}), 2, `size is null for key "b"`},
		{"key-empty", parquetFile(t, []s3ParquetRow{{Bucket: "src-bucket", Key: "", Size: ptr[int64](1)}}), 1, "key is empty"},
		{"size-negative", parquetFile(t, []s3ParquetRow{{Bucket: "src-bucket", Key: "k", Size: ptr[int64](-5)}}), 1, `size -5 of key "k" is negative`},
		{"not-parquet", gzipped(t, object("k", 1, "", "")), 0, "not a Parquet file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store{}
			_, _, err := readAllRecords(t, s, report(t, s, "Parquet", parquetSchema, c.file))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), `inventory file "inv/src-bucket/cfg/data/file-0"`) {
				t.Fatalf("err = %v, want one naming the file and containing %q", err, c.wantErr)
			}
			var re *RowError
			if got := errors.As(err, &re); got != (c.wantRow > 0) || got && re.Row != c.wantRow {
				t.Errorf("err = %v, want a *RowError at row %d (0: none)", err, c.wantRow)
			}
		})
	}
}

// TestParquetFixtureIsS3sSchema holds the tests' Parquet rows to the schema
// S3 documents for its Parquet reports (parquetSchema): the same columns, in
// the same order, with the same physical types, repetition and annotations
// (UTF8 strings, TIMESTAMP_MILLIS).
func TestParquetFixtureIsS3sSchema(t *testing.T) {
	physical := map[string]parquet.Kind{"binary": parquet.ByteArray, "boolean": parquet.Boolean, "int64": parquet.Int64}
	var want []string
	for _, m := range regexp.MustCompile(`(required|optional) (\w+) (\w+)(?: \((\w+)\))?`).FindAllStringSubmatch(parquetSchema, -1) {
		want = append(want, fmt.Sprintf("%s %s %s %s", m[1], physical[m[2]], m[3], m[4]))
	}
	var got []string
	for _, f := range parquet.SchemaOf(s3ParquetRow{}).Fields() {
		repetition := "required"
		if f.Optional() {
			repetition = "optional"
		}
		annotation := ""
		if ct := f.Type().ConvertedType(); ct != nil {
			annotation = map[deprecated.ConvertedType]string{deprecated.UTF8: "UTF8", deprecated.TimestampMillis: "TIMESTAMP_MILLIS"}[*ct]
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", repetition, f.Type().Kind(), f.Name(), annotation))
	}
	if !slices.Equal(got, want) {
		t.Errorf("fixture columns:\n%s\nS3's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
