package extract_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/extract"
)

// zipOf is a ZIP of STORED entries with the given names and bodies.
func zipOf(t *testing.T, entries map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range entries {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExtractRefusesItsOwnArchive: extracting an archive into the prefix
// that holds it, when an entry's key is the archive's own, is refused before
// any write, naming that entry, with --overwrite too: the archive being read
// is never replaced (and then deleted by the failed run's abort).
func TestExtractRefusesItsOwnArchive(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for _, overwrite := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "overwrite"}[overwrite]
		t.Run(name, func(t *testing.T) {
			prefix := "self-" + name + "/"
			b := zipOf(t, map[string][]byte{"a.txt": []byte("first"), "a.zip": bytes.Repeat([]byte("z"), 3000), "b.txt": []byte("last")})
			w.srv.PutObject(t, "dst", prefix+"a.zip", b)
			_, err := extract.Run(ctx, w.s3, extract.Request{Bucket: "dst", Key: prefix + "a.zip", DestBucket: "dst", Prefix: prefix, Workers: 2, Overwrite: overwrite, WorkBucket: "work"}, nil)
			if err == nil || !strings.Contains(err.Error(), `"a.zip"`) || !strings.Contains(err.Error(), "archive being extracted") {
				t.Fatalf("got %v, want a refusal naming entry \"a.zip\" as the archive being extracted", err)
			}
			if typ := extract.ErrorType(err); typ != "RefusedError" {
				t.Errorf("error type %s, want RefusedError", typ)
			}
			got := w.objects(t, "dst", prefix)
			if len(got) != 1 || !bytes.Equal(got["a.zip"], b) {
				t.Errorf("after the refusal %s holds %d objects; want only the archive, unchanged", prefix, len(got))
			}
			w.nothingLeft(t, "nowhere/")
		})
	}
}

// TestExtractRefusesWorkPrefix: the work prefix (s3zip-work/) is the
// program's, and cleanup deletes there: a destination under it, or an entry
// that would land under it, is refused before any write.
func TestExtractRefusesWorkPrefix(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.srv.PutObject(t, "src", "plain.zip", zipOf(t, map[string][]byte{"a.txt": []byte("a")}))
	w.srv.PutObject(t, "src", "sneaky.zip", zipOf(t, map[string][]byte{"a.txt": []byte("a"), "s3zip-work/extract/x/jobs.jsonl": []byte("{}")}))
	for _, tc := range []struct {
		name, archive, bucket, prefix, want string
	}{
		{"destination in the work bucket", "plain.zip", "work", "s3zip-work/mine/", "under the work prefix"},
		{"destination is the work prefix", "plain.zip", "dst", "s3zip-work/", "under the work prefix"},
		{"entry lands under it", "sneaky.zip", "dst", "", `"s3zip-work/extract/x/jobs.jsonl"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := extract.Run(ctx, w.s3, extract.Request{Bucket: "src", Key: tc.archive, DestBucket: tc.bucket, Prefix: tc.prefix, Workers: 2, Overwrite: true, WorkBucket: "work"}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "s3zip-work/") {
				t.Fatalf("got %v, want a refusal saying %s", err, tc.want)
			}
			for _, b := range []string{"dst", "work"} {
				for k := range w.objects(t, b, "") {
					t.Errorf("written despite the refusal: s3://%s/%s", b, k)
				}
			}
		})
	}
}

// pySpecial writes an archive as a Unix zip tool would store a tree with a
// symbolic link, a directory entry carrying data, a character device and a
// named pipe beside two files.
const pySpecial = `
import sys, zipfile
def add(z, name, mode, data):
    i = zipfile.ZipInfo(name, (2024, 1, 2, 3, 4, 6))
    i.create_system = 3
    i.external_attr = mode << 16
    z.writestr(i, data)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    add(z, "file.txt", 0o100644, b"a file\n" * 100)
    add(z, "link", 0o120777, b"file.txt")
    add(z, "etc-passwd", 0o120777, b"/etc/passwd")
    add(z, "dir/", 0o040755, b"a directory holding data")
    add(z, "tty", 0o020620, b"")
    add(z, "pipe", 0o010644, b"")
    add(z, "dir2/file.txt", 0o100644, b"another file\n")
`

// TestExtractSkipsSpecialFiles: symbolic links, directory entries with data,
// device files and named pipes of a third-party archive are not objects:
// they are skipped, each listed with why in the result and the report, and
// the files beside them are extracted.
func TestExtractSkipsSpecialFiles(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.py"), []byte(pySpecial), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "python3", "s.py", "special.zip")
	b, err := os.ReadFile(filepath.Join(dir, "special.zip"))
	if err != nil {
		t.Fatal(err)
	}
	w.srv.PutObject(t, "src", "special.zip", b)
	res, err := w.extract(t, nil, "special.zip", "special/", extract.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	w.same(t, "special/", map[string][]byte{"file.txt": bytes.Repeat([]byte("a file\n"), 100), "dir2/file.txt": []byte("another file\n")})
	want := map[string]string{"link": "symbolic link", "etc-passwd": "symbolic link", "dir/": "directory", "tty": "device", "pipe": "named pipe"}
	got := map[string]string{}
	for _, s := range res.Skipped {
		got[s.Name] = s.Why
	}
	var report struct{ Skipped []extract.Skipped }
	if err := json.Unmarshal(w.srv.GetObject(t, "dst", "special/"+extract.ReportName), &report); err != nil {
		t.Fatal(err)
	}
	inReport := map[string]bool{}
	for _, s := range report.Skipped {
		inReport[s.Name] = true
	}
	for name, why := range want {
		if !strings.Contains(got[name], why) {
			t.Errorf("entry %q: skipped because %q, want it skipped as a %s", name, got[name], why)
		}
		if !inReport[name] {
			t.Errorf("entry %q: not listed in the report's skipped entries", name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("skipped %v, want exactly %v", got, want)
	}
}
