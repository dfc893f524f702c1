package e2e_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/extract"
)

// siteZip is a static site as any ZIP writer makes it (Go's archive/zip):
// no s3zip metadata, some entries deflated, one STORED image big enough
// that extract copies it server-side (the multipart path) rather than
// putting it (the PutObject path).
func siteZip(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct {
		name   string
		method uint16
		data   []byte
	}{
		{"index.html", zip.Deflate, []byte("<!doctype html><title>s3zip</title>")},
		{"css/site.css", zip.Deflate, []byte("body{margin:0}")},
		{"js/app.js", zip.Store, []byte("console.log(1)")},
		{"js/app.js.map", zip.Store, []byte(`{"version":3}`)},
		{"site.webmanifest", zip.Store, []byte(`{"name":"s3zip"}`)},
		{"fonts/a.woff2", zip.Store, []byte("wOF2")},
		{"img/hero.png", zip.Store, body(7, 6*mib)},
		{"LICENSE", zip.Store, []byte("MIT")},
	} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: f.method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// contentTypes is each object's Content-Type under prefix.
func (w *world) contentTypes(t *testing.T, bucket, prefix string, keys ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range keys {
		h, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String(prefix + k)})
		if err != nil {
			t.Fatal(err)
		}
		out[k] = aws.ToString(h.ContentType)
	}
	return out
}

// extractReport is the report object's counts of Content-Types.
func (w *world) extractReport(t *testing.T, bucket, prefix string) map[string]int {
	t.Helper()
	var doc struct {
		ContentTypes map[string]int `json:"contentTypes"`
	}
	if err := json.Unmarshal(w.srv.GetObject(t, bucket, prefix+extract.ReportName), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.ContentTypes
}

// A static site extracted from a plain ZIP is served as a browser needs
// it: every Content-Type from a fixed table by extension (the same on
// Lambda, which has no /etc/mime.types, as here), the rest
// application/octet-stream; the report counts them.
func TestExtractSetsContentTypeByExtension(t *testing.T) {
	w := newWorld(t, "site")
	w.srv.PutObject(t, "site", "site.zip", siteZip(t))
	_, err := extract.Run(context.Background(), w.s3, extract.Request{Bucket: "site", Key: "site.zip", DestBucket: "dst", Prefix: "www/", Workers: 2,
		Options: extract.Options{SmallStored: 1 << 20}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"index.html": "text/html; charset=utf-8", "css/site.css": "text/css; charset=utf-8", "js/app.js": "text/javascript; charset=utf-8",
		"js/app.js.map": "application/json", "site.webmanifest": "application/manifest+json", "fonts/a.woff2": "font/woff2",
		"img/hero.png": "image/png", "LICENSE": "application/octet-stream",
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	got := w.contentTypes(t, "dst", "www/", keys...)
	counts := map[string]int{}
	for k, typ := range want {
		counts[typ]++
		if got[k] != typ {
			t.Errorf("%s: Content-Type %q, want %q", k, got[k], typ)
		}
	}
	if report := w.extractReport(t, "dst", "www/"); !maps.Equal(report, counts) {
		t.Errorf("report's contentTypes %v, want %v", report, counts)
	}
}

// keptObject is a source object with the metadata --keep-metadata keeps.
type keptObject struct {
	data                 []byte
	typ, encoding, cache string
	// extractedTyp is the Content-Type extract writes back when it is not
	// typ: S3's default for an untyped upload gives way to the extension's.
	extractedTyp string
	user         map[string]string
	wantMode     fs.FileMode // what the archive's entry says
	wantTime     time.Time   // to the second; zero: Last-Modified
}

// An archive made with keepMetadata records each object's Content-Type,
// Content-Encoding, Cache-Control and user metadata (rclone's mtime and
// s3fs's mode as entry time and mode too); 7-Zip, Info-ZIP, Go's
// archive/zip and the other readers read it as any archive; extract writes
// every object back with exactly that metadata (and its own
// s3zip-execution key).
func TestKeepMetadataRoundTrip(t *testing.T) {
	w := newWorld(t, "src")
	objects := map[string]keptObject{
		"site/index.html": {data: []byte("<!doctype html>"), typ: "text/html; charset=utf-8", cache: "max-age=60",
			user: map[string]string{"mtime": "1614523456.123456789"}, wantMode: 0o644, wantTime: time.Unix(1614523456, 0)},
		"site/app.js.gz": {data: body(3, 3000), typ: "text/javascript", encoding: "gzip", cache: "public, max-age=31536000, immutable",
			user: map[string]string{"mode": "33261", "mtime": "1700000000", "uid": "1000", "gid": "1000"}, wantMode: 0o755, wantTime: time.Unix(1700000000, 0)},
		"site/data.bin":  {data: body(4, 100_000), typ: "application/x-custom", user: map[string]string{"owner": "ops team", "mode": "100600"}, wantMode: 0o600},
		"site/plain.txt": {data: []byte("no metadata but the type S3 gives"), typ: "binary/octet-stream", extractedTyp: "text/plain; charset=utf-8", wantMode: 0o644},
	}
	for k, o := range objects {
		in := &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String(k), Body: bytes.NewReader(o.data), ContentType: aws.String(o.typ),
			Metadata: o.user, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32}
		if o.encoding != "" {
			in.ContentEncoding = aws.String(o.encoding)
		}
		if o.cache != "" {
			in.CacheControl = aws.String(o.cache)
		}
		if _, err := w.s3.PutObject(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	for _, strategy := range []string{"stream", "chain"} {
		t.Run(strategy, func(t *testing.T) {
			dest := "out/kept-" + strategy + ".zip"
			if _, err := w.run(t, listRequest(strategy, "src", "site/", dest, map[string]any{"keepMetadata": true})); err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{}
			for k, o := range objects {
				want[k] = o.data
			}
			w.check(t, dest, wants("site/", want))
			w.clean(t)

			zr := w.openZip(t, dest)
			for _, f := range zr.File {
				o := objects["site/"+f.Name]
				if f.Mode() != o.wantMode {
					t.Errorf("%s: mode %v, want %v", f.Name, f.Mode(), o.wantMode)
				}
				if !o.wantTime.IsZero() && !f.Modified.Equal(o.wantTime) {
					t.Errorf("%s: modified %v, want %v (its mtime metadata)", f.Name, f.Modified, o.wantTime)
				}
			}

			prefix := "restored-" + strategy + "/"
			if _, err := extract.Run(context.Background(), w.s3, extract.Request{Bucket: "dst", Key: dest, DestBucket: "dst", Prefix: prefix, Workers: 2}, nil); err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for k, o := range objects {
				key := prefix + strings.TrimPrefix(k, "site/")
				h, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: &key})
				if err != nil {
					t.Fatal(err)
				}
				got := [3]string{aws.ToString(h.ContentType), aws.ToString(h.ContentEncoding), aws.ToString(h.CacheControl)}
				typ := o.typ
				if o.extractedTyp != "" {
					typ = o.extractedTyp
				}
				if want := [3]string{typ, o.encoding, o.cache}; got != want {
					t.Errorf("%s: Content-Type, -Encoding, Cache-Control %q, want %q", key, got, want)
				}
				user := maps.Clone(h.Metadata)
				if user[extract.ExecutionMetadata] == "" {
					t.Errorf("%s: no %s metadata", key, extract.ExecutionMetadata)
				}
				delete(user, extract.ExecutionMetadata)
				if wantUser := o.user; !maps.Equal(user, wantUser) {
					t.Errorf("%s: user metadata %v, want exactly %v", key, user, wantUser)
				}
				if got := w.srv.GetObject(t, "dst", key); !bytes.Equal(got, o.data) {
					t.Errorf("%s: %d bytes differ from the source's %d", key, len(got), len(o.data))
				}
				counts[typ]++
			}
			if report := w.extractReport(t, "dst", prefix); !maps.Equal(report, counts) {
				t.Errorf("report's contentTypes %v, want %v", report, counts)
			}
		})
	}
}

// openZip reads the archive at key with Go's archive/zip.
func (w *world) openZip(t *testing.T, key string) *zip.Reader {
	t.Helper()
	b := w.srv.GetObject(t, "dst", key)
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// Kept metadata travels in the pin round's answers, which Step Functions
// holds to 256 KiB per batch: objects with nearly S3's 2 KB of user
// metadata each, in batches as large as the round's job count allows,
// still fit (the local Map enforces the quota as AWS does).
func TestKeepMetadataBatchesFitThePayloadQuota(t *testing.T) {
	w := newWorld(t, "src")
	const n = 600
	note := strings.Repeat("m", 1900)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			_, err := w.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String(fmt.Sprintf("many/%04d.txt", i)),
				Body: strings.NewReader("x"), ContentType: aws.String("text/plain"), Metadata: map[string]string{"note": note}})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.run(t, listRequest("stream", "src", "many/", "out/many.zip", map[string]any{"keepMetadata": true})); err != nil {
		t.Fatal(err)
	}
	zr := w.openZip(t, "out/many.zip")
	if len(zr.File) != n {
		t.Fatalf("%d entries, want %d", len(zr.File), n)
	}
	w.clean(t)
}
