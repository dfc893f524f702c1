package inventory

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
)

func TestParseManifest(t *testing.T) {
	csvJSON, err := os.ReadFile("testdata/manifest-csv.json")
	if err != nil {
		t.Fatal(err)
	}
	parquetJSON, err := os.ReadFile("testdata/manifest-parquet.json")
	if err != nil {
		t.Fatal(err)
	}
	orcJSON, err := os.ReadFile("testdata/manifest-orc.json")
	if err != nil {
		t.Fatal(err)
	}
	replace := func(b []byte, old, new string) []byte {
		return []byte(strings.Replace(string(b), old, new, 1))
	}
	cases := []struct {
		name     string
		json     []byte
		checksum []byte
		want     Format
		wantErr  string // "" means it parses
	}{
		{"csv", csvJSON, nil, FormatCSV, ""},
		{"csv-checksum-ok", csvJSON, []byte(md5Hex(csvJSON) + "\n"), FormatCSV, ""},
		{"csv-checksum-upper-case", csvJSON, []byte(strings.ToUpper(md5Hex(csvJSON))), FormatCSV, ""},
		{"parquet", parquetJSON, []byte(md5Hex(parquetJSON)), FormatParquet, ""},
		{"checksum-mismatch", csvJSON, []byte(md5Hex(append(csvJSON, ' '))), "", "MD5 is " + md5Hex(csvJSON)},
		{"orc-refused", orcJSON, nil, "", "ORC inventories cannot be read: set the inventory configuration's output format to CSV or Apache Parquet"},
		{"csv-schema-without-size", replace(csvJSON, "Size, ", ""), nil, "", "has no size field"},
		{"csv-schema-without-key", replace(csvJSON, "Key, ", ""), nil, "", "has no key field"},
		{"parquet-schema-without-bucket", replace(parquetJSON, "required binary bucket (UTF8);", ""), nil, "", "has no bucket field"},
		{"format-unknown", replace(csvJSON, `"CSV"`, `"JSON"`), nil, "", `fileFormat "JSON" is not CSV or Parquet`},
		{"file-md5-not-hex", replace(csvJSON, "f11166069f1990abeb9c97ace9cdfabc", "not-an-md5"), nil, "", `MD5checksum "not-an-md5" is not 32 hex digits`},
		{"creation-not-millis", replace(csvJSON, "1514944800000", "yesterday"), nil, "", `creationTimestamp "yesterday"`},
		{"not-json", []byte("<xml/>"), nil, "", "inventory manifest.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseManifest(c.json, c.checksum)
			if failed(t, err, c.wantErr) {
				return
			}
			if m.Format != c.want {
				t.Errorf("Format = %q, want %q", m.Format, c.want)
			}
			if m.SourceBucket != "example-source-bucket" || m.DestinationBucketName() != "example-inventory-destination-bucket" {
				t.Errorf("buckets = %q, %q", m.SourceBucket, m.DestinationBucketName())
			}
			if want := time.UnixMilli(1514944800000).UTC(); !m.Created.Equal(want) {
				t.Errorf("Created = %v, want %v", m.Created, want)
			}
			if len(m.Files) != 1 || m.Files[0].Size != 56291 || !strings.HasSuffix(m.Files[0].Key, ".csv.gz") && !strings.HasSuffix(m.Files[0].Key, ".parquet") {
				t.Errorf("Files = %+v", m.Files)
			}
		})
	}
}

func TestParseManifestChecksumErrorType(t *testing.T) {
	_, err := ParseManifest([]byte(`{}`), []byte("00000000000000000000000000000000"))
	var ce *failure.ChecksumMismatchError
	if !errors.As(err, &ce) || ce.What != "inventory manifest.json" {
		t.Fatalf("err = %v, want a *failure.ChecksumMismatchError on manifest.json", err)
	}
}

func TestReadManifest(t *testing.T) {
	fail := errors.New("connection reset")
	cases := []struct {
		name    string
		edit    func(s store, key string)
		open    func(s store) Opener
		wantErr string
	}{
		{"checksum-beside", func(store, string) {}, nil, ""},
		{"checksum-absent", func(s store, key string) { delete(s, ChecksumKey(key)) }, nil, "no manifest.checksum beside it"},
		{"files-absent", func(s store, key string) {
			s[key] = bytes.Replace(s[key], []byte(`"files"`), []byte(`"filez"`), 1)
			sum := md5.Sum(s[key])
			s[ChecksumKey(key)] = []byte(hex.EncodeToString(sum[:]))
		}, nil, `has no "files" list`},
		{"checksum-wrong", func(s store, key string) { s[ChecksumKey(key)] = []byte(strings.Repeat("0", 32)) }, nil, "MD5 is"},
		{"manifest-edited-after-checksum", func(s store, key string) { s[key] = append(s[key], '\n') }, nil, "MD5 is"},
		{"manifest-absent", func(s store, key string) { delete(s, key) }, nil, "manifest.json"},
		{"checksum-read-fails", func(store, string) {}, func(s store) Opener {
			return OpenFunc(func(ctx context.Context, key string) (io.ReadCloser, error) {
				if strings.HasSuffix(key, "manifest.checksum") {
					return nil, fail
				}
				return s.Open(ctx, key)
			})
		}, "connection reset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := store{}
			key := report(t, s, "CSV", csvSchema, gzipped(t, ""))
			c.edit(s, key)
			var open Opener = s
			if c.open != nil {
				open = c.open(s)
			}
			m, err := ReadManifest(context.Background(), open, key)
			if failed(t, err, c.wantErr) {
				return
			}
			if len(m.Files) != 1 {
				t.Errorf("files = %d, want 1", len(m.Files))
			}
		})
	}
}

func TestChecksumKey(t *testing.T) {
	for key, want := range map[string]string{
		"inv/src/cfg/2026-11-24T00-00Z/manifest.json": "inv/src/cfg/2026-11-24T00-00Z/manifest.checksum",
		"manifest.json":         "manifest.checksum",
		"inv/my-manifest.json":  "",
		"inv/manifest.json.bak": "",
	} {
		if got := ChecksumKey(key); got != want {
			t.Errorf("ChecksumKey(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestReadUnparsedManifest(t *testing.T) {
	m := &Manifest{FileFormat: "CSV", FileSchema: csvSchema, Files: []File{{Key: "k"}}}
	_, err := Read(context.Background(), store{}, m, func(Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "get the manifest from ReadManifest or ParseManifest") {
		t.Fatalf("err = %v", err)
	}
}
