package e2e_test

// The layout × option × source matrix: every layout the planner emits
// (stream, duo, chain, and auto's mixes: duo with a share of its runs
// chained, the plan --prefer cost takes, split archives) × compression
// (none, deflate, auto) × digests (--digest sha256 --checksums-file) ×
// kept metadata, over one seeded data set whose objects are stored with
// every checksum kind S3 keeps (none, CRC-32, CRC32C, CRC64NVME, SHA-256,
// a CRC-32 composite of multipart parts, a full-object CRC-32 of a
// multipart upload), at the sizes around the boundaries (0, 1, 5 MiB ± 1)
// and around a part, random and compressible. Each archive is read by the
// seven readers, and each entry's CRC-32 and size are checked against its
// source's bytes.
//
// make test runs a slice (every layout once, every option value twice);
// make test-long runs every cell. A failing cell names its seed and the
// command that runs it again:
//
//	S3ZIP_LONG=1 S3ZIP_MATRIX_SEED=N go test -run 'TestMatrix.*/CELL' ./tests/e2e/

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
	"github.com/s3zip/s3zip/plan"
	"github.com/s3zip/s3zip/zipread"
)

// storedKind is how a source was uploaded, and so which checksum S3 keeps.
type storedKind struct {
	name      string
	opts      []s3test.PutOption
	multipart bool // in 5 MiB parts (one part for less)
}

var storedKinds = []storedKind{
	{name: "none"},
	{name: "crc32", opts: []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumCRC32)}},
	{name: "crc32c", opts: []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumCRC32C)}},
	{name: "crc64nvme", opts: []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumCRC64NVME)}},
	{name: "sha256", opts: []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumSHA256)}},
	{name: "crc32-composite", opts: []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumCRC32), s3test.WithChecksumType(types.ChecksumTypeComposite)}, multipart: true},
	{name: "crc32-full-multipart", opts: []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumCRC32), s3test.WithChecksumType(types.ChecksumTypeFullObject)}, multipart: true},
}

// matrixSource is one object of the data set.
type matrixSource struct {
	key  string
	data []byte
	kind storedKind
	typ  string // its Content-Type
}

// matrixData is the seeded data set, in two prefixes. big/ is 20 objects
// of the challenge's sizes (about 100 MB), which auto lays out as duo's runs
// with some chained at one worker. x/ is what every other layout archives:
// objects just over a part (copied by duo, chained, streamed), the
// boundary sizes, compressible text of both sizes, and small objects
// (about 35 MB). Each object's checksum kind is drawn by the seed, every
// kind at least once in each prefix.
func matrixData(seed uint64) []matrixSource {
	rng := rand.New(rand.NewPCG(seed, 31))
	var big, x []matrixSource
	for i, e := range plan.Challenge(20, seed) {
		big = append(big, matrixSource{key: "m/big/" + e.Source.Key[:2] + "/" + e.Source.Key, data: body(seed*1000+uint64(i), int(e.Size)), typ: "application/octet-stream"})
	}
	add := func(name string, data []byte, typ string) {
		x = append(x, matrixSource{key: "m/x/" + name, data: data, typ: typ})
	}
	for i := range 4 {
		add(fmt.Sprintf("copy/%02d.bin", i), body(seed*1000+50+uint64(i), 5*mib+rng.IntN(2*mib)), "application/octet-stream")
	}
	for i, size := range []int{0, 1, 5*mib - 1, 5 * mib, 5*mib + 1} {
		add(fmt.Sprintf("edge/%d-%d.bin", i, size), body(seed*1000+100+uint64(i), size), "application/octet-stream")
	}
	add("text/big.log", logLines(seed, 5*mib+rng.IntN(mib)), "text/plain")
	add("text/small.log", logLines(seed+1, 200_000+rng.IntN(100_000)), "text/plain")
	for i := range 8 {
		size := 10 + rng.IntN(64<<10)
		if i%2 == 0 {
			add(fmt.Sprintf("small/%d.txt", i), logLines(seed*7+uint64(i), size), "text/plain; charset=utf-8")
		} else {
			add(fmt.Sprintf("small/%d.bin", i), body(seed*1000+200+uint64(i), size), "image/png")
		}
	}
	for _, set := range [][]matrixSource{big, x} {
		for i, k := range rng.Perm(len(set)) {
			set[i].kind = storedKinds[k%len(storedKinds)]
		}
	}
	return append(big, x...)
}

// putMatrix uploads the data set, each object as its kind says.
func (w *world) putMatrix(t *testing.T, bucket string, objects []matrixSource) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	for _, o := range objects {
		g.Go(func() error {
			opts := append(slices.Clone(o.kind.opts), s3test.WithContentType(o.typ))
			if !o.kind.multipart {
				w.srv.PutObject(t, bucket, o.key, o.data, opts...)
				return nil
			}
			var parts [][]byte
			for off := 0; off == 0 || off < len(o.data); off += 5 * mib {
				parts = append(parts, o.data[off:min(off+5*mib, len(o.data))])
			}
			w.srv.PutMultipartObject(t, bucket, o.key, parts, opts...)
			return nil
		})
	}
	g.Wait()
}

// matrixLayout is a layout the planner emits and the request options that
// make it choose it.
type matrixLayout struct {
	name string
	// prefix is the part of the data set it archives ("" for all of it).
	prefix string
	opts   map[string]any
	// check says what the plan must hold for the cell to test that layout
	// (nil: nothing more than that it built).
	check func(c matrixCell, out *create.FinalizeOutput) string
}

var matrixLayouts = []matrixLayout{
	{name: "stream", prefix: "x/", opts: map[string]any{"strategy": "stream"}},
	{name: "duo", prefix: "x/", opts: map[string]any{"strategy": "duo"}, check: has("copy", "upload")},
	{name: "chain", prefix: "x/", opts: map[string]any{"strategy": "chain"}, check: has("chain")},
	// One worker, the challenge's objects: auto chains some of duo's runs
	// (the layout; x/'s objects added tip it to duo's). With
	// digests the read pass has read every object, and auto chains none
	// (a chain saves reading, which is done): at 1 to 8 workers, preferring
	// time or cost, it lays them out as duo; the cell checks that.
	{name: "auto-mixed", prefix: "big/", opts: map[string]any{"strategy": "auto", "maxConcurrency": 1}, check: func(c matrixCell, out *create.FinalizeOutput) string {
		if c.digest {
			return has("copy", "upload")(c, out)
		}
		return has("chain", "copy", "upload")(c, out)
	}},
	{name: "auto-cost", prefix: "x/", opts: map[string]any{"strategy": "auto", "prefer": "cost", "maxConcurrency": 4}},
	{name: "auto-split", prefix: "x/", opts: map[string]any{"strategy": "auto", "splitSize": 12 * mib}, check: func(_ matrixCell, out *create.FinalizeOutput) string {
		if len(out.Archives) < 2 {
			return fmt.Sprintf("%d archives, want a split run", len(out.Archives))
		}
		return ""
	}},
}

// has says which part kinds the plan must have.
func has(kinds ...string) func(matrixCell, *create.FinalizeOutput) string {
	return func(_ matrixCell, out *create.FinalizeOutput) string {
		st := out.Stats
		n := map[string]int{"copy": st.CopyParts, "upload": st.UploadParts, "chain": st.ChainParts}
		for _, k := range kinds {
			if n[k] == 0 {
				return fmt.Sprintf("no %s part (copy %d, upload %d, chain %d): the data set no longer gives the layout", k, st.CopyParts, st.UploadParts, st.ChainParts)
			}
		}
		return ""
	}
}

// matrixCell is one archive of the matrix.
type matrixCell struct {
	layout   matrixLayout
	compress string // "", "deflate", "auto"
	digest   bool
	meta     bool
}

func (c matrixCell) name() string {
	n := c.layout.name + "-" + cmp(c.compress, "stored")
	if c.digest {
		n += "-sha256"
	}
	if c.meta {
		n += "-meta"
	}
	return n
}

func cmp(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func (c matrixCell) options() map[string]any {
	o := map[string]any{}
	for k, v := range c.layout.opts {
		o[k] = v
	}
	if c.compress != "" {
		o["compression"] = c.compress
	}
	if c.digest {
		o["digests"], o["checksumsFile"] = []string{"sha256"}, "SHA256SUMS"
	}
	if c.meta {
		o["keepMetadata"] = true
	}
	return o
}

// matrixCells is every cell.
func matrixCells() []matrixCell {
	var cells []matrixCell
	for _, l := range matrixLayouts {
		for _, c := range []string{"", "deflate", "auto"} {
			for _, d := range []bool{false, true} {
				for _, m := range []bool{false, true} {
					cells = append(cells, matrixCell{layout: l, compress: c, digest: d, meta: m})
				}
			}
		}
	}
	return cells
}

// matrixSlice is make test's slice: each layout once, the options turning
// so that each of their values comes up at least twice, and the issue's
// run (auto's mixed layout, no option) among them.
func matrixSlice() []matrixCell {
	compress := []string{"", "deflate", "auto"}
	var cells []matrixCell
	for i, l := range matrixLayouts {
		c := matrixCell{layout: l, compress: compress[i%3], digest: i%2 == 1, meta: i/2%2 == 1}
		if l.name == "auto-mixed" {
			c = matrixCell{layout: l}
		}
		cells = append(cells, c)
	}
	return cells
}

func matrixSeed(t *testing.T) uint64 {
	if s := os.Getenv("S3ZIP_MATRIX_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("S3ZIP_MATRIX_SEED=%q: want a number", s)
		}
		return v
	}
	return 1
}

func runMatrix(t *testing.T, cells []matrixCell) {
	seed := matrixSeed(t)
	w := newWorld(t, "src")
	objects := matrixData(seed)
	w.putMatrix(t, "src", objects)
	t.Logf("matrix: seed %d, %d cells, %d sources", seed, len(cells), len(objects))
	for _, c := range cells {
		t.Run(c.name(), func(t *testing.T) {
			dest := "out/" + c.name() + ".zip"
			res, err := w.runMatrixCell(t, c, dest)
			if err != nil {
				t.Fatalf("%v\nreplay: S3ZIP_LONG=1 S3ZIP_MATRIX_SEED=%d go test -count=1 -run 'TestMatrix.*/^%s$' ./tests/e2e/", err, seed, c.name())
			}
			defer func() {
				if t.Failed() {
					t.Logf("replay: S3ZIP_LONG=1 S3ZIP_MATRIX_SEED=%d go test -count=1 -run 'TestMatrix.*/^%s$' ./tests/e2e/", seed, c.name())
				}
			}()
			if c.layout.check != nil {
				if msg := c.layout.check(c, res.Output); msg != "" {
					t.Errorf("%s: %s", c.layout.name, msg)
				}
			}
			var in []matrixSource
			for _, o := range objects {
				if strings.HasPrefix(o.key, "m/"+c.layout.prefix) {
					in = append(in, o)
				}
			}
			w.checkMatrix(t, c, res.Output, in)
			w.clean(t)
		})
	}
}

// runMatrixCell builds the cell's archive as the CLI and a deployment do:
// the plan cuts its batches for its workers.
func (w *world) runMatrixCell(t *testing.T, c matrixCell, dest string) (*create.RunResult, error) {
	raw, err := json.Marshal(listRequest("", "src", "m/"+c.layout.prefix, dest, c.options()))
	if err != nil {
		t.Fatal(err)
	}
	r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4}}
	return r.Run(context.Background(), raw, "e2e-"+strings.ReplaceAll(t.Name(), "/", "-"))
}

// checkMatrix reads every archive of the cell's run with the readers and
// checks each entry's CRC-32 and size against its source, the digests file
// against the sources' SHA-256s, and kept metadata.
func (w *world) checkMatrix(t *testing.T, c matrixCell, out *create.FinalizeOutput, objects []matrixSource) {
	t.Helper()
	archives := []create.Archive{out.Archive}
	if len(out.Archives) > 0 {
		archives = out.Archives
	}
	var keys []string
	for _, a := range archives {
		keys = append(keys, strings.TrimPrefix(a.URI, "s3://dst/"))
	}
	bySource := map[string]matrixSource{}
	for _, o := range objects {
		bySource[strings.TrimPrefix(o.key, "m/"+c.layout.prefix)] = o
	}
	seen := map[string]int{}
	var sums []byte
	for _, key := range keys {
		path := filepath.Join(t.TempDir(), "archive.zip")
		w.srv.DownloadFile(t, "dst", key, path)
		a, err := zipread.Open(context.Background(), w.s3, "dst", key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		var want []zipcheck.Want
		for _, e := range a.Entries {
			seen[e.Name]++
			if c.digest && e.Name == "SHA256SUMS" {
				doc := w.entryBytes(t, path, e.Name)
				sums = append(sums, doc...)
				want = append(want, zipcheck.WantBytes(e.Name, doc))
				continue
			}
			o, ok := bySource[e.Name]
			if !ok {
				t.Errorf("%s: entry %q is no source", key, e.Name)
				continue
			}
			want = append(want, zipcheck.WantBytes(e.Name, o.data))
			if crc := crc32.ChecksumIEEE(o.data); e.CRC32 != crc || e.UncompressedSize != int64(len(o.data)) {
				t.Errorf("%s: %s (stored %s): CRC-32 %08x size %d, the source has %08x and %d", key, e.Name, o.kind.name, e.CRC32, e.UncompressedSize, crc, len(o.data))
			}
			if c.meta {
				m, err := e.Metadata()
				if err != nil || m == nil {
					t.Errorf("%s: %s: kept metadata %v, %v", key, e.Name, m, err)
				} else if m.ContentType != o.typ {
					t.Errorf("%s: %s: kept Content-Type %q, the source has %q", key, e.Name, m.ContentType, o.typ)
				}
			} else if e.MetaField != nil {
				t.Errorf("%s: %s: metadata kept though not asked", key, e.Name)
			}
		}
		zipcheck.Check(t, path, want)
	}
	for name := range bySource {
		if seen[name] != 1 {
			t.Errorf("%s is in the archives %d times, want once", name, seen[name])
		}
	}
	if c.digest {
		checkSums(t, sums, bySource)
	}
}

// entryBytes is an entry's data, read with Go's archive/zip.
func (w *world) entryBytes(t *testing.T, path, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := zr.Open(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkSums checks the SHA256SUMS documents (each archive's, of a split
// run, one after another): one line per source, its SHA-256.
func checkSums(t *testing.T, doc []byte, sources map[string]matrixSource) {
	t.Helper()
	if doc == nil {
		t.Error("no SHA256SUMS entry")
		return
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Errorf("SHA256SUMS line %q is not 'sum  name'", sc.Text())
			continue
		}
		listed[name] = sum
	}
	var missing []string
	for name, o := range sources {
		want := sha256.Sum256(o.data)
		if got, ok := listed[name]; !ok {
			missing = append(missing, name)
		} else if got != hex.EncodeToString(want[:]) {
			t.Errorf("SHA256SUMS: %s %s, its bytes have %x", name, got, want)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("SHA256SUMS lists no sum for %v", missing)
	}
}

// The slice make test runs: each layout once, among them the run
// (auto, one worker, its mixed layout, sources with stored CRC-32s), which
// failed at the final Complete with BadDigest before the worker checked a
// ranged copy's answer against the CRC-32 its source stores.
func TestMatrixSlice(t *testing.T) { runMatrix(t, matrixSlice()) }

// Every cell (make test-long).
func TestMatrixEveryCell(t *testing.T) {
	long(t)
	runMatrix(t, matrixCells())
}
