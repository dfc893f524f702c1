package inventory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
)

const modifiedCSV = "2026-11-23T21:32:07.123Z"

// object is a CSV row of csvSchema for a latest, live version.
func object(key string, size int64, etag, algorithm string) string {
	return csvRow("src-bucket", key, "v1", "true", "false", fmt.Sprint(size), modifiedCSV, etag, "STANDARD", "false", algorithm)
}

func TestReadCSV(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		files  []string // each a CSV file's text
		want   []Record
		sum    Summary
	}{
		{
			name:   "fields",
			schema: csvSchema,
			files:  []string{object("photos/a.jpg", 6223, "e131b86632dda753aac4018f72192b83", "CRC32")},
			want: []Record{{Bucket: "src-bucket", Key: "photos/a.jpg", VersionID: "v1", IsLatest: true, Size: 6223,
				LastModified: modified, ETag: "e131b86632dda753aac4018f72192b83", ChecksumAlgorithm: "CRC32"}},
			sum: Summary{Files: 1, Rows: 1, Objects: 1, Bytes: 6223},
		},
		{
			// S3 form-encodes a CSV report's keys: a space is "+", a "+" is
			// "%2B", anything outside ASCII is its UTF-8 bytes in %XX.
			name:   "url-encoded-keys",
			schema: csvSchema,
			files: []string{
				object("my+photos/summer+2024/a%2Bb.jpg", 1, "", "") +
					object("caf%C3%A9/%E6%97%A5%E6%9C%AC%E8%AA%9E+%F0%9F%98%80.txt", 2, "", "") +
					object("100%25+done%2C+really%3F", 3, "", "") +
					object("dir%2Fsub%2Fspace%20encoded%20too", 4, "", "") +
					object(url.QueryEscape(" lead and trail +/ "), 5, "", ""),
			},
			want: []Record{
				{Key: "my photos/summer 2024/a+b.jpg", Size: 1},
				{Key: "café/日本語 😀.txt", Size: 2},
				{Key: "100% done, really?", Size: 3},
				{Key: "dir/sub/space encoded too", Size: 4},
				{Key: " lead and trail +/ ", Size: 5},
			},
			sum: Summary{Files: 1, Rows: 5, Objects: 5, Bytes: 15},
		},
		{
			name:   "versions-and-delete-markers-skipped",
			schema: csvSchema,
			files: []string{
				csvRow("src-bucket", "a", "v3", "true", "true", "", modifiedCSV, "", "", "", "") + // a deleted object
					csvRow("src-bucket", "a", "v2", "false", "false", "10", modifiedCSV, "x", "STANDARD", "false", "") +
					object("b", 20, "", ""),
				csvRow("src-bucket", "c", "v9", "false", "true", "", modifiedCSV, "", "", "", "") + // an older delete marker
					object("d", 30, "", ""),
			},
			want: []Record{{Key: "b", Size: 20}, {Key: "d", Size: 30}},
			sum:  Summary{Files: 2, Rows: 5, Objects: 2, Bytes: 50, DeleteMarkers: 2, NonLatest: 1},
		},
		{
			// A report of current versions only has no VersionId, IsLatest or
			// IsDeleteMarker: every row is an object.
			name:   "current-versions-only",
			schema: "Bucket, Key, Size, LastModifiedDate, ETag",
			files:  []string{csvRow("src-bucket", "k", "7", modifiedCSV, "abc")},
			want:   []Record{{Bucket: "src-bucket", Key: "k", IsLatest: true, Size: 7, LastModified: modified, ETag: "abc"}},
			sum:    Summary{Files: 1, Rows: 1, Objects: 1, Bytes: 7},
		},
		{
			name:   "no-rows",
			schema: csvSchema,
			files:  []string{""},
			sum:    Summary{Files: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store{}
			var files [][]byte
			for _, f := range c.files {
				files = append(files, gzipped(t, f))
			}
			got, sum, err := readAllRecords(t, s, report(t, s, "CSV", c.schema, files...))
			if err != nil {
				t.Fatal(err)
			}
			if sum != c.sum {
				t.Errorf("summary = %+v, want %+v", sum, c.sum)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d records, want %d: %+v", len(got), len(c.want), got)
			}
			for i, w := range c.want {
				g := got[i]
				if g.Key != w.Key || g.Size != w.Size {
					t.Errorf("record %d = %q %d, want %q %d", i, g.Key, g.Size, w.Key, w.Size)
				}
				if w.Bucket != "" && g != w {
					t.Errorf("record %d = %+v, want %+v", i, g, w)
				}
				if !g.IsLatest || g.IsDeleteMarker {
					t.Errorf("record %d yielded as latest=%v deleteMarker=%v", i, g.IsLatest, g.IsDeleteMarker)
				}
			}
		})
	}
}

func TestReadCSVRejects(t *testing.T) {
	good := object("ok", 1, "", "")
	cases := []struct {
		name    string
		text    string
		wantRow int64
		wantErr string
	}{
		{"too-few-fields", good + csvRow("src-bucket", "k", "1"), 2, "3 fields, the manifest's fileSchema has 11"},
		{"size-not-a-number", good + good + csvRow("src-bucket", "k", "v", "true", "false", "12x", modifiedCSV, "", "", "", ""), 3, `Size "12x" of key "k" is not a byte count`},
		{"size-negative", csvRow("src-bucket", "k", "v", "true", "false", "-1", modifiedCSV, "", "", "", ""), 1, `Size "-1"`},
		{"size-empty", csvRow("src-bucket", "k", "v", "true", "false", "", modifiedCSV, "", "", "", ""), 1, `Size is empty for key "k"`},
		{"key-bad-escape", good + object("bad%zzkey", 1, "", ""), 2, `Key "bad%zzkey" is not URL-encoded`},
		{"key-empty", object("", 1, "", ""), 1, "Key is empty"},
		{"bucket-empty", csvRow("", "k", "v", "true", "false", "1", modifiedCSV, "", "", "", ""), 1, "Bucket is empty"},
		{"is-latest-not-bool", csvRow("src-bucket", "k", "v", "yes", "false", "1", modifiedCSV, "", "", "", ""), 1, `IsLatest "yes" is not true or false`},
		{"delete-marker-not-bool", csvRow("src-bucket", "k", "v", "true", "no", "1", modifiedCSV, "", "", "", ""), 1, `IsDeleteMarker "no"`},
		{"date-not-iso", csvRow("src-bucket", "k", "v", "true", "false", "1", "11/23/2026 21:32", "", "", "", ""), 1, `LastModifiedDate "11/23/2026 21:32" of key "k"`},
		{"bare-quote", good + `"src-bucket","k"x",` + "\n", 2, `extraneous or missing " in quoted-field`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store{}
			key := report(t, s, "CSV", csvSchema, gzipped(t, c.text))
			_, _, err := readAllRecords(t, s, key)
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *RowError", err)
			}
			if re.File != "inv/src-bucket/cfg/data/file-0" || re.Row != c.wantRow {
				t.Errorf("error names file %q row %d, want file-0 row %d", re.File, re.Row, c.wantRow)
			}
			if !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), fmt.Sprintf("row %d", c.wantRow)) {
				t.Errorf("err = %q, want it to contain %q", err, c.wantErr)
			}
		})
	}
}

func TestReadCSVNotGzip(t *testing.T) {
	s := store{}
	key := report(t, s, "CSV", csvSchema, []byte(object("k", 1, "", "")))
	_, _, err := readAllRecords(t, s, key)
	if err == nil || !strings.Contains(err.Error(), `inventory file "inv/src-bucket/cfg/data/file-0": not gzip-compressed CSV`) {
		t.Fatalf("err = %v", err)
	}
}

// TestReadDataFileMD5Mismatch: a data file whose bytes are not those the
// manifest's MD5checksum describes fails the read, naming the file.
func TestReadDataFileMD5Mismatch(t *testing.T) {
	cases := []struct {
		name, format, schema string
		file                 []byte
	}{
		{"csv", "CSV", csvSchema, gzipped(t, object("k", 1, "", ""))},
		{"parquet", "Parquet", parquetSchema, parquetFile(t, []s3ParquetRow{{Bucket: "src-bucket", Key: "k", Size: ptr[int64](1)}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store{}
			key := report(t, s, c.format, c.schema, c.file)
			want := md5Hex(c.file)
			// The same rows, written again: S3 rewrote the file after the manifest.
			var other []byte
			if c.format == "CSV" {
				other = gzipped(t, object("k", 1, "", "")+object("k2", 2, "", ""))
			} else {
				other = parquetFile(t, []s3ParquetRow{{Bucket: "src-bucket", Key: "k", Size: ptr[int64](2)}})
			}
			s["inv/src-bucket/cfg/data/file-0"] = other
			_, _, err := readAllRecords(t, s, key)
			var ce *failure.ChecksumMismatchError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ChecksumError", err)
			}
			if ce.Want != want || ce.Got != md5Hex(other) || !strings.Contains(err.Error(), `file "inv/src-bucket/cfg/data/file-0"`) {
				t.Errorf("err = %v, want the file's name, got MD5 %s and manifest MD5 %s", err, md5Hex(other), want)
			}
		})
	}
}

func TestReadYieldErrorStops(t *testing.T) {
	s := store{}
	key := report(t, s, "CSV", csvSchema, gzipped(t, object("a", 1, "", "")+object("b", 2, "", "")))
	m, err := ReadManifest(context.Background(), s, key)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("plan is full")
	calls := 0
	_, err = Read(context.Background(), s, m, func(Record) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err = %v after %d calls, want the yield's error after 1", err, calls)
	}
}

// servedReader counts the bytes a data file has served.
type servedReader struct {
	r      io.Reader
	served *int64
}

func (s servedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	*s.served += int64(n)
	return n, err
}
func (servedReader) Close() error { return nil }

// TestReadCSVStreams: the first record is yielded long before the file has
// been read, so a file's rows are never all in memory.
func TestReadCSVStreams(t *testing.T) {
	s, m := csvReport(t, 100_000, func(i int) string {
		return object(fmt.Sprintf("logs/2026/11/23/%08d-%x.json.gz", i, i*7919), int64(i%9000), fmt.Sprintf("%032x", i), "CRC32")
	})
	file := s["inv/src-bucket/cfg/data/file-0"]
	var served int64
	open := OpenFunc(func(ctx context.Context, k string) (io.ReadCloser, error) {
		if k != "inv/src-bucket/cfg/data/file-0" {
			return s.Open(ctx, k)
		}
		return servedReader{bytes.NewReader(file), &served}, nil
	})
	servedAtFirst := int64(-1)
	sum, err := Read(context.Background(), open, m, func(Record) error {
		if servedAtFirst < 0 {
			servedAtFirst = served
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Objects != 100_000 || served != int64(len(file)) {
		t.Fatalf("read %d objects, %d of %d bytes", sum.Objects, served, len(file))
	}
	if servedAtFirst > int64(len(file))/4 {
		t.Errorf("first record yielded after %d of %d bytes: the file is not streamed", servedAtFirst, len(file))
	}
}

func TestReadCanceled(t *testing.T) {
	s := store{}
	key := report(t, s, "CSV", csvSchema, gzipped(t, object("a", 1, "", "")))
	m, err := ReadManifest(context.Background(), s, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, s, m, func(Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// FuzzReadCSV: whatever the bytes, reader.csv returns (no panic), every record
// it yields has a bucket, a key and a size, and an error names its row.
func FuzzReadCSV(f *testing.F) {
	f.Add(object("a+b%2Bc", 1, "e", "CRC32"))
	f.Add(object("caf%C3%A9", 2, "", "") + csvRow("src-bucket", "a", "v3", "true", "true", "", modifiedCSV, "", "", "", ""))
	f.Add(`"a","b"` + "\n")
	f.Add(`"src-bucket","%zz","v","true","false","1","x","","","",""` + "\n")
	f.Add("\"unterminated\n")
	columns, err := schemaColumns(FormatCSV, csvSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		yielded := int64(0)
		rd := &reader{yield: func(r Record) error {
			yielded++
			if r.Bucket == "" || r.Key == "" || r.Size < 0 || !r.IsLatest || r.IsDeleteMarker {
				t.Fatalf("yielded %+v", r)
			}
			return nil
		}}
		err := rd.csv(context.Background(), "fuzz.csv", strings.NewReader(text), columns)
		sum := rd.sum
		if yielded != sum.Objects || sum.Rows != sum.Objects+sum.DeleteMarkers+sum.NonLatest {
			t.Fatalf("summary %+v after %d records", sum, yielded)
		}
		if err != nil {
			var re *RowError
			if !errors.As(err, &re) || re.File != "fuzz.csv" || re.Row != sum.Rows+1 {
				t.Fatalf("err = %v, want a *RowError naming fuzz.csv and a row", err)
			}
		}
	})
}

// BenchmarkReadCSV reads a 1,000,000-row gzip CSV data file (keys of about
// 40 bytes, every field of csvSchema) and reports rows per second.
func BenchmarkReadCSV(b *testing.B) {
	const rows = 1_000_000
	s, m := csvReport(b, rows, func(i int) string {
		return object(fmt.Sprintf("logs/2026/11/%02d/host-%03d/%08d.json.gz", i%30, i%200, i), int64(4096+i%9000), fmt.Sprintf("%032x", i), "CRC32")
	})
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		sum, err := Read(context.Background(), s, m, func(Record) error { return nil })
		if err != nil || sum.Objects != rows {
			b.Fatalf("%v: %+v", err, sum)
		}
	}
	b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "rows/s")
}

// TestKeptRecordsHoldOnlyTheirText: a planner keeps millions of records; a
// kept record must not keep the rest of its row (here a 2 KB field no record
// uses) alive with it.
func TestKeptRecordsHoldOnlyTheirText(t *testing.T) {
	const rows = 20_000
	padding := strings.Repeat("x", 2048)
	s, m := csvReport(t, rows, func(i int) string {
		return csvRow("src-bucket", fmt.Sprintf("k/%06d", i), "v1", "true", "false", "1", modifiedCSV, "etag", padding, "false", "CRC32")
	})
	kept := make([]Record, 0, rows)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Read(context.Background(), s, m, func(r Record) error { kept = append(kept, r); return nil }); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRecord := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / rows
	// Each record's own text is "k/000000" "v1" "etag": 14 bytes, 16 with
	// rounding; the row it came from is over 2 KB.
	if perRecord > 256 {
		t.Errorf("the heap grew by %d bytes per kept record: records keep their rows alive", perRecord)
	}
	runtime.KeepAlive(kept)
}

// csvReport is a report of one CSV data file of n rows, row(i) each.
func csvReport(t testing.TB, n int, row func(i int) string) (store, *Manifest) {
	t.Helper()
	var text strings.Builder
	for i := range n {
		text.WriteString(row(i))
	}
	s := store{}
	key := report(t, s, "CSV", csvSchema, gzipped(t, text.String()))
	m, err := ReadManifest(context.Background(), s, key)
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}
