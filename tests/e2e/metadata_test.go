package e2e_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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
	if report := w.extractReport(t, "dst", "www/"); !mapsEqual(report, counts) {
		t.Errorf("report's contentTypes %v, want %v", report, counts)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
