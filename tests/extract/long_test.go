package extract_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
)

func long(t *testing.T) {
	t.Helper()
	if os.Getenv("S3ZIP_LONG") != "1" {
		t.Skip("long case: run with S3ZIP_LONG=1 (make test-long)")
	}
}

const pyMany = `
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for i in range(int(sys.argv[2])):
        z.writestr("f/%06d.txt" % i, ("entry %d\n" % i) * (i % 7), compress_type=zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)
`

// TestExtractMoreThan65535Entries: a ZIP64 archive (Python zipfile writes
// the ZIP64 end records past 65,535 entries), stored and deflated entries.
func TestExtractMoreThan65535Entries(t *testing.T) {
	long(t)
	w := newWorld(t)
	dir := t.TempDir()
	const n = 70000
	os.WriteFile(filepath.Join(dir, "m.py"), []byte(pyMany), 0o644)
	run(t, dir, "python3", "m.py", "many.zip", fmt.Sprint(n))
	b, err := os.ReadFile(filepath.Join(dir, "many.zip"))
	if err != nil {
		t.Fatal(err)
	}
	w.srv.PutObject(t, "src", "many.zip", b)
	res, err := w.extract(t, nil, "many.zip", "many/", extract.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != n {
		t.Fatalf("%d objects, want %d", len(res.Objects), n)
	}
	count := 0
	p := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: aws.String("many/f/")})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		count += len(page.Contents)
	}
	if count != n {
		t.Errorf("%d objects under many/f/, want %d", count, n)
	}
	for _, i := range []int{0, 1, 6, 65534, 65535, 65536, n - 1} {
		want := bytes.Repeat([]byte(fmt.Sprintf("entry %d\n", i)), i%7)
		if got := w.srv.GetObject(t, "dst", fmt.Sprintf("many/f/%06d.txt", i)); !bytes.Equal(got, want) {
			t.Errorf("entry %d: %q, want %q", i, got, want)
		}
	}
	w.nothingLeft(t, "nowhere/")
}

// TestExtractOver5GiBEntry: an archive over 4 GiB (ZIP64 sizes and
// offsets) made by create, with an entry over 5 GiB: copied server-side in
// two ranges, byte-identical.
func TestExtractOver5GiBEntry(t *testing.T) {
	long(t)
	w := newWorld(t)
	ctx := context.Background()
	const size = 5<<30 + 12345
	up, err := w.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("src"), Key: aws.String("in/video.bin")})
	if err != nil {
		t.Fatal(err)
	}
	const partSize = 256 << 20
	chunk := make([]byte, partSize)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	h := sha256.New()
	var parts []types.CompletedPart
	for off, n := int64(0), int32(1); off < size; off, n = off+partSize, n+1 {
		b := chunk[:min(partSize, size-off)]
		h.Write(b)
		out, err := w.s3.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("src"), Key: aws.String("in/video.bin"), UploadId: up.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag})
	}
	if _, err := w.s3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("src"), Key: aws.String("in/video.bin"), UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	want := h.Sum(nil)
	w.srv.PutObject(t, "src", "in/after.txt", []byte("after"))
	raw, _ := json.Marshal(map[string]any{
		"source": map[string]any{"bucket": "src", "prefix": "in/"}, "destination": map[string]any{"bucket": "src", "key": "big.zip"},
		"options": map[string]any{"strategy": "duo"},
	})
	r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 3}}
	if _, err := r.Run(ctx, raw, "big"); err != nil {
		t.Fatal(err)
	}
	res, err := w.extract(t, nil, "big.zip", "big/", extract.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied < size {
		t.Errorf("copied %d bytes server-side, want the whole %d-byte entry", res.Copied, int64(size))
	}
	out, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("dst"), Key: aws.String("big/video.bin")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	g := sha256.New()
	if n, err := io.Copy(g, out.Body); err != nil || n != size {
		t.Fatalf("read %d bytes of %d: %v", n, int64(size), err)
	}
	if !bytes.Equal(g.Sum(nil), want) {
		t.Errorf("extracted video.bin differs from the source")
	}
	if got := string(w.srv.GetObject(t, "dst", "big/after.txt")); got != "after" {
		t.Errorf("after.txt = %q", got)
	}
	w.nothingLeft(t, "nowhere/")
}
