package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/zipread"
)

// storedZip builds a ZIP of STORED entries with CRC-32s in the local headers.
func storedZip(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, data := range files {
		fw, err := w.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Store, Modified: time.Date(2024, 1, 2, 3, 4, 6, 0, time.UTC),
			CRC32: crc32.ChecksumIEEE([]byte(data)), CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cliServer starts versitygw with archives in bucket "cli" and points the
// default AWS credential chain at it.
func cliServer(t *testing.T) *s3test.Server {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "cli")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey())
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey())
	t.Setenv("AWS_REGION", s3test.Region)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("S3_ENDPOINT", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	files := map[string]string{"a.txt": "alpha", "d/b.txt": "bravo", "d/c.txt": ""}
	good := storedZip(t, files)
	srv.PutObject(t, "cli", "good.zip", good)
	bad := bytes.Clone(good)
	i := bytes.Index(bad, []byte("alpha"))
	bad[i] = 'A'
	srv.PutObject(t, "cli", "bad.zip", bad)
	srv.PutObject(t, "cli", "truncated.zip", good[:len(good)-30])
	return srv
}

// putTestdata puts archives from zipread/testdata (values, relative to it)
// into bucket "cli" under the keys.
func putTestdata(t *testing.T, srv *s3test.Server, files map[string]string) {
	t.Helper()
	for key, file := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", "zipread", "testdata", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		srv.PutObject(t, "cli", key, b)
	}
}

func TestVerifyCommand(t *testing.T) {
	srv := cliServer(t)
	// Written by Python's zipfile on a stream: data descriptors with ZIP64
	// sizes after every entry; and one whose first descriptor's CRC-32 is
	// wrong (see zipread/testdata/descriptors); and one whose first
	// descriptor has the right CRC-32 but a wrong size, which 7-Zip,
	// Info-ZIP and Go read correctly and Java's ZipInputStream rejects.
	// bsdtar writing to a pipe pads the archive with zeros after its end
	// record (see zipread/testdata/bsdtar).
	putTestdata(t, srv, map[string]string{"streamed.zip": "descriptors/python-stream-zip64.zip", "bad-descriptor.zip": "descriptors/bad-descriptor-crc.zip",
		"descriptor-sizes.zip": "descriptors/warn-descriptor-sizes.zip", "padded.zip": "bsdtar/pipe-padded.zip", "dot.zip": "bsdtar/dot.zip"})
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" for success
		wantOut string
	}{
		{"good-archive", []string{"s3://cli/good.zip", "--endpoint", srv.Endpoint()}, "", "3 entries (3 files, 0 directories"},
		{"flags-first", []string{"--concurrency", "2", "--endpoint", srv.Endpoint(), "s3://cli/good.zip"}, "", ": OK"},
		{"flipped-byte", []string{"s3://cli/bad.zip", "--endpoint", srv.Endpoint()}, "bad.zip: 1 problem", `problem: entry "a.txt": data has CRC-32`},
		{"data-descriptors", []string{"s3://cli/streamed.zip", "--endpoint", srv.Endpoint()}, "", "4 entries (4 files, 0 directories, 0 with ZIP64 fields, 4 with data descriptors), ZIP64 end records: no, 12378 bytes checked"},
		{"wrong-data-descriptor", []string{"s3://cli/bad-descriptor.zip", "--endpoint", srv.Endpoint()}, "1 problem", `problem: entry "readme.txt": data descriptor (16 bytes: signature, CRC-32, 4-byte sizes) says CRC-32 b8fc7b7d`},
		{"descriptor-sizes-warn", []string{"s3://cli/descriptor-sizes.zip", "--endpoint", srv.Endpoint()}, "",
			`warning: entry "readme.txt": data descriptor (16 bytes: signature, CRC-32, 4-byte sizes) says compressed size 67, uncompressed size 3840; the central directory says 66, 3840 (7-Zip, Info-ZIP and Go's archive/zip read the central directory's; Java's ZipInputStream and other streaming readers reject the entry) (offset 106)
s3://cli/descriptor-sizes.zip: 4 entries`},
		{"descriptor-sizes-summary", []string{"s3://cli/descriptor-sizes.zip", "--endpoint", srv.Endpoint()}, "", ": OK, 1 warning\n"},
		{"trailing-zeros-warn", []string{"s3://cli/padded.zip", "--endpoint", srv.Endpoint()}, "",
			`warning: 9735 bytes after the end of central directory record belong to no record (all zeros, as bsdtar pads an archive it writes to a pipe; Info-ZIP and Go's archive/zip ignore them, 7-Zip warns of a "Tail Size") (offset 505)
s3://cli/padded.zip: 3 entries (2 files, 1 directory, 0 with ZIP64 fields, 2 with data descriptors), ZIP64 end records: no, 19 bytes checked in `},
		{"trailing-zeros-summary", []string{"s3://cli/padded.zip", "--endpoint", srv.Endpoint()}, "", ": OK, 1 warning\n"},
		{"dot-components-warn", []string{"s3://cli/dot.zip", "--endpoint", srv.Endpoint()}, "",
			`warning: entry "./a": name has a "." component, which 7-Zip, Info-ZIP and Go's archive/zip read past; get and extract write it as "a" (offset 64)`},
		{"dot-components-summary", []string{"s3://cli/dot.zip", "--endpoint", srv.Endpoint()}, "", ": OK, 4 warnings\n"},
		{"truncated", []string{"s3://cli/truncated.zip", "--endpoint", srv.Endpoint()}, "not a readable ZIP archive", "problem: no end of central directory"},
		{"missing-object", []string{"s3://cli/nope.zip", "--endpoint", srv.Endpoint()}, "s3://cli/nope.zip does not exist", ""},
		{"not-an-s3-uri", []string{"cli/good.zip", "--endpoint", srv.Endpoint()}, "not an S3 URI", ""},
		{"no-argument", []string{"--endpoint", srv.Endpoint()}, "missing s3://bucket/archive.zip", ""},
		{"env-endpoint", []string{"s3://cli/good.zip"}, "", ": OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "env-endpoint" {
				t.Setenv("S3_ENDPOINT", srv.Endpoint())
			}
			var out bytes.Buffer
			err := run(t.Context(), append([]string{"verify"}, tc.args...), &out)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("verify: error %v, want %q\n%s", err, tc.wantErr, out.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("verify printed %q, want it to contain %q", out.String(), tc.wantOut)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		var out bytes.Buffer
		err := run(t.Context(), []string{"verify", "--json", "--endpoint", srv.Endpoint(), "s3://cli/bad.zip"}, &out)
		var r zipread.Report
		if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil || err == nil {
			t.Fatalf("verify --json: %v, decode: %v\n%s", err, jerr, out.String())
		}
		if r.Entries != 3 || len(r.Problems) != 1 || r.Problems[0].Entry != "a.txt" || r.Warnings == nil || len(r.Warnings) != 0 {
			t.Errorf("report %+v", r)
		}
	})
	t.Run("json-warnings", func(t *testing.T) {
		var out bytes.Buffer
		err := run(t.Context(), []string{"verify", "--json", "--endpoint", srv.Endpoint(), "s3://cli/descriptor-sizes.zip"}, &out)
		var r zipread.Report
		if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil || err != nil {
			t.Fatalf("verify --json: %v, decode: %v\n%s", err, jerr, out.String())
		}
		if len(r.Problems) != 0 || len(r.Warnings) != 1 || r.Warnings[0].Entry != "readme.txt" || !strings.Contains(out.String(), `"warnings": [`) {
			t.Errorf("report %+v", r)
		}
	})
}

func TestGetCommand(t *testing.T) {
	srv := cliServer(t)
	putTestdata(t, srv, map[string]string{"padded.zip": "bsdtar/pipe-padded.zip", "dot.zip": "bsdtar/dot.zip", "dot-clash.zip": "bsdtar/dot-clash.zip"})
	dir := filepath.Join(t.TempDir(), "out")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"get", "s3://cli/good.zip", dir, "--endpoint", srv.Endpoint(), "--concurrency", "4"}, &out); err != nil {
		t.Fatalf("get: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "extracted 3 entries (3 files, 0 directories), 10 bytes") {
		t.Errorf("get printed %q", out.String())
	}
	for name, want := range map[string]string{"a.txt": "alpha", "d/b.txt": "bravo", "d/c.txt": ""} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"existing-files", []string{"get", "s3://cli/good.zip", dir, "--endpoint", srv.Endpoint()}, "file already exists"},
		{"overwrite", []string{"get", "--overwrite", "s3://cli/good.zip", dir, "--endpoint", srv.Endpoint()}, ""},
		{"trailing-zeros", []string{"get", "s3://cli/padded.zip", filepath.Join(dir, "padded"), "--endpoint", srv.Endpoint()}, ""},
		{"dot-components", []string{"get", "s3://cli/dot.zip", filepath.Join(dir, "dot"), "--endpoint", srv.Endpoint()}, ""},
		{"dot-components-clash", []string{"get", "s3://cli/dot-clash.zip", filepath.Join(dir, "clash"), "--endpoint", srv.Endpoint()},
			`entries "./a" and "a" would both be written to "a" (without their "." components); rename one`},
		{"corrupt-archive", []string{"get", "s3://cli/bad.zip", t.TempDir(), "--endpoint", srv.Endpoint()}, "data has CRC-32"},
		{"missing-dir-argument", []string{"get", "s3://cli/good.zip", "--endpoint", srv.Endpoint()}, "missing DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tc.args, &out)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("get: error %v, want %q", err, tc.wantErr)
			}
		})
	}
	for name, want := range map[string]string{"padded/a": "alpha\n", "padded/d/b": "bravo bravo bravo bravo\n", "dot/a": "alpha\n", "dot/d/b": "bravo bravo bravo bravo\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestParseS3URI(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, key, err, objectErr string
	}{
		{"s3://b/k.zip", "b", "k.zip", "", ""},
		{"s3://b/dir/k.zip", "b", "dir/k.zip", "", ""},
		{"s3://b/prefix/", "b", "prefix/", "", "names no object"},
		{"s3://b/", "b", "", "", "names no object"},
		{"s3://b", "b", "", "", "names no object"},
		{"s3:///k", "", "", "has no bucket", "has no bucket"},
		{"https://b/k", "", "", "not an S3 URI", "not an S3 URI"},
	} {
		b, k, err := parseS3URI(tc.in)
		if b != tc.bucket || k != tc.key || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseS3URI(%q) = %q, %q, %v; want %q, %q, %q", tc.in, b, k, err, tc.bucket, tc.key, tc.err)
		}
		_, _, err = parseS3ObjectURI(tc.in)
		if (err == nil) != (tc.objectErr == "") || err != nil && !strings.Contains(err.Error(), tc.objectErr) {
			t.Errorf("parseS3ObjectURI(%q): %v, want %q", tc.in, err, tc.objectErr)
		}
	}
}
