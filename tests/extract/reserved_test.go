package extract_test

import (
	"archive/zip"
	"bytes"
	"context"
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
