package asl_test

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/presign"
	"github.com/s3zip/s3zip/internal/testenv/outputschema"
)

// A split run through the real ASL, with SHA256SUMS and links: the read
// pass, then one BuildParts Map over every archive's part jobs (batches of
// one, so the Map's children each send a part of one archive or another),
// then the finalizer. The output matches the schema and lists every
// archive; each archive is a ZIP of its own whose SHA256SUMS lists exactly
// its other entries; each link downloads its archive.
func TestASLSplitRun(t *testing.T) {
	e := newEnv(t)
	e.fns.Links = presign.Signer{Client: e.s3}
	e.fns.Configure(func(c *create.Config) { c.MaxPresignSeconds = 3600 })
	out := e.execute(t, request("out/split.zip", `,"splitSize":8388608,"digests":["sha256"],"checksumsFile":"SHA256SUMS","presign":"1h"`), "exec-split")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	res := outputschema.Decode[create.FinalizeOutput](t, out.Output)
	if len(res.Archives) < 3 || res.Links == nil || len(res.Links.Archives) != len(res.Archives) {
		t.Fatalf("output: %s; want several archives, a link each", out.Output)
	}
	held := 0
	for k, a := range res.Archives {
		body := e.srv.GetObject(t, "dst", create.ArchiveKey("out/split.zip", k))
		if int64(len(body)) != a.Size || a.Size > 8*mib && a.Entries != 2 {
			t.Errorf("archive %d: %d bytes, output says %+v (over the split size only one entry and its SHA256SUMS)", k+1, len(body), a)
		}
		zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
		if err != nil {
			t.Fatalf("archive %d alone: %v", k+1, err)
		}
		var names []string
		var sums string
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc) // archive/zip checks the CRC-32
			rc.Close()
			if err != nil {
				t.Fatalf("archive %d, %s: %v", k+1, f.Name, err)
			}
			if f.Name == "SHA256SUMS" {
				sums = string(b)
				continue
			}
			if !bytes.Equal(b, e.want["in/"+f.Name]) {
				t.Errorf("archive %d, %s: not the source's bytes", k+1, f.Name)
			}
			names = append(names, f.Name)
		}
		held += len(names)
		for _, n := range names {
			if !strings.Contains(sums, "  "+n+"\n") {
				t.Errorf("archive %d's SHA256SUMS does not list %s:\n%s", k+1, n, sums)
			}
		}
		if strings.Count(sums, "\n") != len(names) {
			t.Errorf("archive %d's SHA256SUMS lists %d entries, it holds %d", k+1, strings.Count(sums, "\n"), len(names))
		}
		resp, err := http.Get(res.Links.Archives[k])
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, body) {
			t.Errorf("archive %d's link: %s, %d bytes; want the archive", k+1, resp.Status, len(got))
		}
	}
	if held != len(e.want) {
		t.Errorf("the archives hold %d entries, the sources are %d", held, len(e.want))
	}
	e.assertClean(t, "out/split.zip")
}
