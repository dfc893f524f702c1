// Extract tests: archives made by s3zip create and by third-party writers
// (Info-ZIP zip, 7-Zip, Python zipfile, Java) extracted by extract.Run into a
// real S3-compatible server (versitygw) and compared byte for byte with what
// went in; hostile and unsupported archives refused with nothing written;
// faults mid-run leave nothing behind.
package extract_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

const mib = 1 << 20

type world struct {
	srv *s3test.Server
	s3  *s3.Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := s3test.Start(t)
	w := &world{srv: srv, s3: srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	return w
}

// objects lists every object under prefix with its bytes.
func (w *world) objects(t *testing.T, bucket, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(w.s3, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			out[strings.TrimPrefix(k, prefix)] = w.srv.GetObject(t, bucket, k)
		}
	}
	return out
}

// nothingLeft asserts no object under prefix and no multipart upload in dst.
func (w *world) nothingLeft(t *testing.T, prefix string) {
	t.Helper()
	for k := range w.objects(t, "dst", prefix) {
		t.Errorf("left behind: s3://dst/%s%s", prefix, k)
	}
	for _, l := range w.srv.Leftovers(t, "work", "dst") {
		if !strings.HasPrefix(l, "work object ") {
			t.Errorf("left behind: %s", l)
		}
	}
}

func (w *world) extract(t *testing.T, c extract.Client, archiveKey, prefix string, opts extract.Options, overwrite bool) (*extract.Result, error) {
	t.Helper()
	if c == nil {
		c = w.s3
	}
	return extract.Run(context.Background(), c, extract.Request{
		Bucket: "src", Key: archiveKey, DestBucket: "dst", Prefix: prefix, Workers: 4, Overwrite: overwrite, Options: opts,
	}, nil)
}

// same asserts that the objects under prefix (but the report) are want.
func (w *world) same(t *testing.T, prefix string, want map[string][]byte) {
	t.Helper()
	got := w.objects(t, "dst", prefix)
	delete(got, extract.ReportName)
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g, ok := got[n]
		switch {
		case !ok:
			t.Errorf("%s%s: missing", prefix, n)
		case !bytes.Equal(g, want[n]):
			t.Errorf("%s%s: %d bytes differ from the %d that went in", prefix, n, len(g), len(want[n]))
		}
		delete(got, n)
	}
	for n := range got {
		t.Errorf("%s%s: extracted but never went in", prefix, n)
	}
}

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

func sources() map[string][]byte {
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 40000)
	return map[string][]byte{
		"empty.txt":           {},
		"tiny.txt":            []byte("hello"),
		"docs/readme.md":      text[:100<<10],
		"docs/big text.txt":   text,
		"img/photo+1.jpg":     s3test.Bytes(1, 300<<10),
		"img/ünïcode.bin":     s3test.Bytes(2, 2*mib+17),
		"data/seven.bin":      s3test.Bytes(3, 7*mib+3),
		"data/deep/a/b/c.bin": s3test.Bytes(4, 12*mib+1),
	}
}

// TestExtractRoundTrip: create with every strategy, then extract with every
// way of writing STORED entries (small ones read and put, all copied, copies
// cut into 5 MiB parts): byte-identical, report and metadata right, nothing
// left.
func TestExtractRoundTrip(t *testing.T) {
	w := newWorld(t)
	src := sources()
	for k, b := range src {
		w.srv.PutObject(t, "src", "in/"+k, b)
	}
	for _, strategy := range []string{"stream", "duo", "chain", "auto"} {
		key := "archives/" + strategy + ".zip"
		raw, _ := json.Marshal(map[string]any{
			"source":      map[string]any{"bucket": "src", "prefix": "in/"},
			"destination": map[string]any{"bucket": "src", "key": key},
			"options":     map[string]any{"strategy": strategy},
		})
		r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 3}}
		if _, err := r.Run(context.Background(), raw, "extract-"+strategy); err != nil {
			t.Fatalf("create %s: %v", strategy, err)
		}
		for _, tc := range []struct {
			name string
			opts extract.Options
		}{
			{"default", extract.Options{}},
			{"all copied", extract.Options{SmallStored: -1}},
			{"5 MiB copy parts", extract.Options{SmallStored: -1, CopyPart: 5 * mib}},
		} {
			t.Run(strategy+"/"+tc.name, func(t *testing.T) {
				prefix := "out/" + strategy + "/" + strings.ReplaceAll(tc.name, " ", "-") + "/"
				res, err := w.extract(t, nil, key, prefix, tc.opts, false)
				if err != nil {
					t.Fatal(err)
				}
				w.same(t, prefix, src)
				if len(res.Objects) != len(src) {
					t.Errorf("result lists %d objects, want %d", len(res.Objects), len(src))
				}
				var rep struct{ Objects []extract.Written }
				if err := json.Unmarshal(w.srv.GetObject(t, "dst", prefix+extract.ReportName), &rep); err != nil {
					t.Fatal(err)
				}
				if len(rep.Objects) != len(src) {
					t.Errorf("report lists %d objects, want %d", len(rep.Objects), len(src))
				}
				for _, o := range rep.Objects {
					b := src[strings.TrimPrefix(o.Key, prefix)]
					if o.Size != int64(len(b)) || o.CRC32 != fmt.Sprintf("%08x", crc(b)) {
						t.Errorf("report: %s size %d CRC %s, want %d %08x", o.Key, o.Size, o.CRC32, len(b), crc(b))
					}
				}
				if tc.opts.SmallStored == -1 && res.Copied < int64(len(src["data/deep/a/b/c.bin"])) {
					t.Errorf("copied %d bytes server-side, want at least the 12 MiB entry", res.Copied)
				}
				h, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String(prefix + "img/photo+1.jpg")})
				if err != nil {
					t.Fatal(err)
				}
				if ct := aws.ToString(h.ContentType); ct != "image/jpeg" {
					t.Errorf("Content-Type %q, want image/jpeg", ct)
				}
				if h.Metadata["mtime"] == "" {
					t.Errorf("no mtime metadata: %v", h.Metadata)
				}
				w.nothingLeft(t, "nowhere/")
			})
		}
	}
	t.Run("existing objects refused, then overwritten", func(t *testing.T) {
		_, err := w.extract(t, nil, "archives/duo.zip", "out/duo/default/", extract.Options{}, false)
		// The earlier run's report is named as what it is, not counted as an entry.
		var ee *failure.DestinationExistsError
		if !errors.As(err, &ee) || len(ee.Keys) != len(src) || ee.Report != "out/duo/default/"+extract.ReportName {
			t.Fatalf("got %v, want an ExistsError listing the %d entries' keys and the report apart", err, len(src))
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%d objects where the archive's entries would go", len(src))) ||
			!strings.Contains(msg, "the report of an earlier extraction into the prefix, out/duo/default/"+extract.ReportName) {
			t.Errorf("the refusal says %q", msg)
		}
		if _, err := w.extract(t, nil, "archives/duo.zip", "out/duo/default/", extract.Options{}, true); err != nil {
			t.Fatalf("--overwrite: %v", err)
		}
		w.same(t, "out/duo/default/", src)
	})
}

// writeFiles writes src under dir.
func writeFiles(t *testing.T, dir string, src map[string][]byte) {
	t.Helper()
	for n, b := range src {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

const pyWriter = `
import sys, os, zipfile
out, method, stream = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "stream"
names = []
for root, dirs, files in os.walk("in"):
    for f in files:
        names.append(os.path.relpath(os.path.join(root, f), "in"))
class Unseekable:
    def __init__(self, f): self.f = f
    def write(self, b): return self.f.write(b)
    def flush(self): self.f.flush()
with open(out, "wb") as raw:
    target = Unseekable(raw) if stream else raw
    with zipfile.ZipFile(target, "w", compression=method) as z:
        z.comment = b"an archive comment"
        for n in sorted(names):
            with open(os.path.join("in", n), "rb") as f:
                data = f.read()
            if stream:
                info = zipfile.ZipInfo(n, (2020, 1, 2, 3, 4, 6))
                info.compress_type = method
                with z.open(info, "w") as e:
                    e.write(data)
            else:
                z.writestr(n, data, compress_type=method)
`

const javaWriter = `
import java.io.*;
import java.nio.file.*;
import java.util.zip.*;
public class W {
  public static void main(String[] a) throws Exception {
    boolean stored = a[1].equals("stored");
    try (ZipOutputStream z = new ZipOutputStream(new FileOutputStream(a[0]))) {
      Path root = Paths.get("in");
      for (Path p : (Iterable<Path>) Files.walk(root).filter(Files::isRegularFile).sorted()::iterator) {
        byte[] b = Files.readAllBytes(p);
        ZipEntry e = new ZipEntry(root.relativize(p).toString().replace(File.separatorChar, '/'));
        if (stored) {
          CRC32 c = new CRC32(); c.update(b);
          e.setMethod(ZipEntry.STORED); e.setSize(b.length); e.setCompressedSize(b.length); e.setCrc(c.getValue());
        }
        z.putNextEntry(e); z.write(b); z.closeEntry();
      }
    }
  }
}
`

// TestExtractThirdParty: archives written by other tools, stored and
// deflated, with data descriptors (Python to a non-seekable stream, Java
// deflated, zip from a pipe), comments and extra fields.
func TestExtractThirdParty(t *testing.T) {
	w := newWorld(t)
	src := sources()
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "in"), src)
	if err := os.WriteFile(filepath.Join(dir, "w.py"), []byte(pyWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "W.java"), []byte(javaWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	writers := []struct {
		name string
		make func(t *testing.T, out string)
	}{
		{"zip deflated", func(t *testing.T, out string) { run(t, filepath.Join(dir, "in"), "zip", "-q", "-r", "-X", out, ".") }},
		{"zip stored", func(t *testing.T, out string) { run(t, filepath.Join(dir, "in"), "zip", "-q", "-r", "-0", out, ".") }},
		{"zip from a pipe (data descriptors)", func(t *testing.T, out string) {
			run(t, filepath.Join(dir, "in"), "sh", "-c", "find . -type f | sort | zip -q - -@ > "+out)
		}},
		{"7zz deflated", func(t *testing.T, out string) { run(t, filepath.Join(dir, "in"), "7zz", "a", "-bd", "-tzip", out, ".") }},
		{"7zz stored", func(t *testing.T, out string) {
			run(t, filepath.Join(dir, "in"), "7zz", "a", "-bd", "-tzip", "-mx=0", out, ".")
		}},
		{"python deflated", func(t *testing.T, out string) { run(t, dir, "python3", "w.py", out, "8", "file") }},
		{"python stored", func(t *testing.T, out string) { run(t, dir, "python3", "w.py", out, "0", "file") }},
		{"python non-seekable stream (data descriptors)", func(t *testing.T, out string) { run(t, dir, "python3", "w.py", out, "8", "stream") }},
		{"python stored non-seekable stream", func(t *testing.T, out string) { run(t, dir, "python3", "w.py", out, "0", "stream") }},
		{"java deflated (data descriptors)", func(t *testing.T, out string) { run(t, dir, "java", "W.java", out, "deflated") }},
		{"java stored", func(t *testing.T, out string) { run(t, dir, "java", "W.java", out, "stored") }},
	}
	for k, wr := range writers {
		t.Run(wr.name, func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("a%d.zip", k))
			wr.make(t, out)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("third/%d.zip", k)
			w.srv.PutObject(t, "src", key, b)
			for _, opts := range []extract.Options{{}, {SmallStored: -1}} {
				prefix := fmt.Sprintf("third/%d/%d/", k, opts.SmallStored)
				res, err := w.extract(t, nil, key, prefix, opts, false)
				if err != nil {
					t.Fatal(err)
				}
				w.same(t, prefix, src)
				// The archive was stored without a checksum: S3 answers every
				// ranged copy with its bytes' CRC-32 and nothing is read to check.
				if res.VerifyRead != 0 {
					t.Errorf("%d bytes read to check copies, want 0", res.VerifyRead)
				}
			}
		})
	}
	w.nothingLeft(t, "nowhere/")
}

// TestExtractDataDescriptorArchives: the archives with data descriptors that
// get and verify are tested with (zipread/testdata/descriptors: Python's
// zipfile on a stream, Info-ZIP zip -fd and through pipes, bsdtar, 7-Zip to
// stdout, Java's ZipOutputStream, Go's archive/zip; with and without
// descriptor signatures, with ZIP64 descriptors) extract to what Go's
// archive/zip reads from them, with STORED entries read and put and with
// every one copied from the archive by ranged UploadPartCopy.
func TestExtractDataDescriptorArchives(t *testing.T) {
	w := newWorld(t)
	paths, err := filepath.Glob(filepath.Join("..", "..", "zipread", "testdata", "descriptors", "*.zip"))
	if err != nil || len(paths) < 10 {
		t.Fatalf("%d archives in zipread/testdata/descriptors (%v)", len(paths), err)
	}
	for k, path := range paths {
		name := filepath.Base(path)
		if strings.HasPrefix(name, "bad-") { // broken on purpose, for verify
			continue
		}
		t.Run(strings.TrimSuffix(name, ".zip"), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			w.extractsBothWays(t, "descriptors/"+name, b, fmt.Sprintf("descriptors/%d/", k), readWithGo(t, b))
		})
	}
}

// extractsBothWays puts the archive b at key and extracts it under
// prefix+"0/" (small STORED entries read and put) and prefix+"-1/" (every
// STORED entry copied by ranged UploadPartCopy); each must hold want.
func (w *world) extractsBothWays(t *testing.T, key string, b []byte, prefix string, want map[string][]byte) {
	t.Helper()
	w.srv.PutObject(t, "src", key, b)
	for _, opts := range []extract.Options{{}, {SmallStored: -1}} {
		dest := fmt.Sprintf("%s%d/", prefix, opts.SmallStored)
		if _, err := w.extract(t, nil, key, dest, opts, false); err != nil {
			t.Fatal(err)
		}
		w.same(t, dest, want)
	}
}

// TestExtractBsdtarArchives: what libarchive's bsdtar writes
// (zipread/testdata/bsdtar, see gen.sh there), which 7-Zip, Info-ZIP and Go
// read correctly, extracts to the files those readers read: an archive
// padded with zeros after its end record (written to a pipe), and one whose
// names start with "./" (bsdtar -cf x.zip .), written as "a" and "d/b". An
// archive with "./a" and "a" is refused, naming both.
func TestExtractBsdtarArchives(t *testing.T) {
	w := newWorld(t)
	want := map[string][]byte{"a": []byte("alpha\n"), "d/b": []byte("bravo bravo bravo bravo\n")}
	for k, name := range []string{"pipe-padded.zip", "dot.zip"} {
		t.Run(strings.TrimSuffix(name, ".zip"), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "zipread", "testdata", "bsdtar", name))
			if err != nil {
				t.Fatal(err)
			}
			w.extractsBothWays(t, "bsdtar/"+name, b, fmt.Sprintf("bsdtar/%d/", k), want)
		})
	}
	t.Run("dot-clash", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("..", "..", "zipread", "testdata", "bsdtar", "dot-clash.zip"))
		if err != nil {
			t.Fatal(err)
		}
		w.srv.PutObject(t, "src", "bsdtar/dot-clash.zip", b)
		_, err = w.extract(t, nil, "bsdtar/dot-clash.zip", "bsdtar/clash/", extract.Options{}, false)
		if want := `"a" would be written to the same key "bsdtar/clash/a" as entry "./a"`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want an error saying %s", err, want)
		}
		w.nothingLeft(t, "bsdtar/clash/")
	})
}

// readWithGo returns the files of the archive b as Go's archive/zip reads
// them (checking each one's CRC-32), by name.
func readWithGo(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("archive/zip: %s: %v", f.Name, err)
		}
		files[f.Name] = data
	}
	return files
}

// crafted archives, written by Python so that the hostile parts are exact.
const pyHostile = `
import sys, zipfile, struct, io
kind, out = sys.argv[1], sys.argv[2]
def plain(names, method=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for n in names:
            z.writestr(n, b"x" * 2000)
    return buf.getvalue()
if kind == "zip-slip":
    b = plain(["ok.txt", "../evil.txt", "a/../../evil2.txt"])
elif kind == "absolute":
    b = plain(["ok.txt", "/etc/evil"])
elif kind == "backslash":
    b = plain(["ok.txt", "a\\\\..\\\\evil.txt"])
elif kind == "duplicate":
    b = plain(["ok.txt", "ok.txt"])
elif kind == "bzip2":
    b = plain(["ok.txt", "b.txt"], zipfile.ZIP_BZIP2)
elif kind == "lzma":
    b = plain(["ok.txt"], zipfile.ZIP_LZMA)
elif kind == "truncated":
    b = plain(["ok.txt", "b.txt"])[:-30]
elif kind == "not-a-zip":
    b = b"this is not a zip archive at all\n" * 100
elif kind == "cd-outside":
    b = bytearray(plain(["ok.txt", "b.txt"]))
    cd = b.rfind(b"PK\x01\x02")
    struct.pack_into("<I", b, cd + 42, 10**9)   # local header offset far past the end
    b = bytes(b)
elif kind == "overlapping":
    # a second central directory header naming the first entry's local header: the same bytes twice
    b = bytearray(plain(["ok.txt", "b.txt"]))
    first = b.find(b"PK\x01\x02")
    second = b.rfind(b"PK\x01\x02")
    off = struct.unpack_from("<I", b, first + 42)[0]
    struct.pack_into("<I", b, second + 42, off)
    b = bytes(b)
elif kind == "size-outside":
    b = bytearray(plain(["ok.txt"]))
    cd = b.rfind(b"PK\x01\x02")
    struct.pack_into("<I", b, cd + 20, 10**8); struct.pack_into("<I", b, cd + 24, 10**8)
    b = bytes(b)
elif kind == "bad-crc":
    b = bytearray(plain(["ok.txt", "big.bin"]))
    cd = b.rfind(b"PK\x01\x02")
    struct.pack_into("<I", b, cd + 16, 0x12345678)
    b = bytes(b)
open(out, "wb").write(b)
`

// TestExtractRefused: hostile, unsupported and broken archives are refused
// with an error naming the problem, and nothing is written.
func TestExtractRefused(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.py"), []byte(pyHostile), 0o644); err != nil {
		t.Fatal(err)
	}
	make := func(t *testing.T, kind string) string {
		out := filepath.Join(dir, kind+".zip")
		run(t, dir, "python3", "h.py", kind, out)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		key := "hostile/" + kind + ".zip"
		w.srv.PutObject(t, "src", key, b)
		return key
	}
	for _, tc := range []struct {
		kind, want string
	}{
		{"zip-slip", `".." component`},
		{"absolute", "absolute path"},
		{"backslash", "backslash"},
		{"duplicate", "same key"},
		{"bzip2", "bzip2"},
		{"lzma", "LZMA"},
		{"truncated", "not a readable ZIP"},
		{"not-a-zip", "no end of central directory"},
		{"cd-outside", "outside"},
		{"overlapping", "overlapping"},
		{"size-outside", "past the end of the entries"},
		{"bad-crc", "CRC-32"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			key := make(t, tc.kind)
			for _, opts := range []extract.Options{{}, {SmallStored: -1}} {
				prefix := "refused/" + tc.kind + "/"
				_, err := w.extract(t, nil, key, prefix, opts, false)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error saying %q", err, tc.want)
				}
				w.nothingLeft(t, prefix)
			}
		})
	}
	t.Run("encrypted", func(t *testing.T) {
		in := filepath.Join(dir, "enc")
		writeFiles(t, in, map[string][]byte{"secret.txt": []byte("secret"), "plain.txt": []byte("plain")})
		run(t, in, "zip", "-q", "-P", "pw", "../enc.zip", "secret.txt")
		run(t, in, "zip", "-q", "../enc.zip", "plain.txt")
		b, _ := os.ReadFile(filepath.Join(dir, "enc.zip"))
		w.srv.PutObject(t, "src", "hostile/enc.zip", b)
		if _, err := w.extract(t, nil, "hostile/enc.zip", "refused/enc/", extract.Options{}, false); err == nil || !strings.Contains(err.Error(), "encrypted") {
			t.Fatalf("got %v, want an error saying the entry is encrypted", err)
		}
		w.nothingLeft(t, "refused/enc/")
		res, err := w.extract(t, nil, "hostile/enc.zip", "skipped/enc/", extract.Options{SkipUnsupported: true}, false)
		if err != nil {
			t.Fatal(err)
		}
		w.same(t, "skipped/enc/", map[string][]byte{"plain.txt": []byte("plain")})
		if len(res.Skipped) != 1 || res.Skipped[0].Name != "secret.txt" {
			t.Errorf("skipped %v, want secret.txt", res.Skipped)
		}
		if rep := string(w.srv.GetObject(t, "dst", "skipped/enc/"+extract.ReportName)); !strings.Contains(rep, "secret.txt") {
			t.Errorf("report does not list the skipped entry:\n%s", rep)
		}
	})
	t.Run("skip-unsupported never skips unsafe names", func(t *testing.T) {
		if _, err := w.extract(t, nil, "hostile/zip-slip.zip", "refused/skip/", extract.Options{SkipUnsupported: true}, false); err == nil {
			t.Fatal("zip-slip archive extracted with --skip-unsupported")
		}
		w.nothingLeft(t, "refused/skip/")
	})
}

// faulty fails chosen requests after the first few succeed, and can replace
// the archive mid-run.
type faulty struct {
	*s3.Client
	op      string
	after   int32
	n       atomic.Int32
	replace func()
	cancel  context.CancelFunc // interrupts the run (Ctrl-C) instead of failing the request
}

func (f *faulty) hit(op string) bool {
	return op == f.op && f.n.Add(1) > f.after
}

var errInjected = errors.New("injected fault")

func (f *faulty) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, o ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	if f.hit("UploadPartCopy") {
		if f.cancel != nil {
			f.cancel()
		} else if f.replace != nil {
			f.replace()
		} else {
			return nil, errInjected
		}
	}
	return f.Client.UploadPartCopy(ctx, in, o...)
}

func (f *faulty) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if f.hit("PutObject") {
		if f.cancel != nil {
			f.cancel()
		} else {
			return nil, errInjected
		}
	}
	return f.Client.PutObject(ctx, in, o...)
}

func (f *faulty) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if f.hit("CompleteMultipartUpload") {
		return nil, errInjected
	}
	return f.Client.CompleteMultipartUpload(ctx, in, o...)
}

func (f *faulty) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if f.hit("GetObject") {
		if f.replace != nil {
			f.replace()
		} else {
			return nil, errInjected
		}
	}
	return f.Client.GetObject(ctx, in, o...)
}

// TestExtractFaults: a failing copy, put, complete or read after some
// objects were written, and the archive replaced mid-run: the run fails
// cleanly, every upload aborted and every object it wrote deleted.
func TestExtractFaults(t *testing.T) {
	w := newWorld(t)
	src := sources()
	for k, b := range src {
		w.srv.PutObject(t, "src", "in/"+k, b)
	}
	raw, _ := json.Marshal(map[string]any{
		"source": map[string]any{"bucket": "src", "prefix": "in/"}, "destination": map[string]any{"bucket": "src", "key": "a.zip"},
	})
	r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 3}}
	if _, err := r.Run(context.Background(), raw, "faults"); err != nil {
		t.Fatal(err)
	}
	original := w.srv.GetObject(t, "src", "a.zip")
	opts := extract.Options{SmallStored: 256 << 10, CopyPart: 5 * mib}
	for _, tc := range []struct {
		name, op string
		after    int32
		replace  bool
		want     any
		cancel   bool
	}{
		{"interrupted mid-copy", "UploadPartCopy", 1, false, nil, true},
		{"interrupted mid-put", "PutObject", 1, false, nil, true},
		{"copy fails", "UploadPartCopy", 2, false, nil, false},
		{"put fails", "PutObject", 2, false, nil, false},
		{"complete fails", "CompleteMultipartUpload", 1, false, nil, false},
		{"read fails", "GetObject", 3, false, nil, false},
		{"archive replaced before a copy", "UploadPartCopy", 1, true, new(*failure.SourceChangedError), false},
		{"archive replaced before a read", "GetObject", 3, true, new(*failure.SourceChangedError), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.srv.PutObject(t, "src", "a.zip", original)
			f := &faulty{Client: w.s3, op: tc.op, after: tc.after}
			if tc.replace {
				var once atomic.Bool
				f.replace = func() {
					if once.CompareAndSwap(false, true) {
						w.srv.PutObject(t, "src", "a.zip", append(append([]byte{}, original...), 0))
					}
				}
			}
			prefix := "faults/" + strings.ReplaceAll(tc.name, " ", "-") + "/"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				f.cancel = cancel
			}
			_, err := extract.Run(ctx, f, extract.Request{Bucket: "src", Key: "a.zip", DestBucket: "dst", Prefix: prefix, Workers: 4, Options: opts}, nil)
			if err == nil {
				t.Fatal("the run succeeded despite the fault")
			}
			if target, ok := tc.want.(**failure.SourceChangedError); ok && !errors.As(err, target) {
				t.Errorf("got %v, want a SourceChangedError", err)
			}
			w.nothingLeft(t, prefix)
		})
	}
}
