package e2e_test

// The read pass end to end at size: an object cut into many pieces (each
// compressed on its own, joined by the layout planner) in the normal suite,
// and an entry over 4 GiB uncompressed (ZIP64 with a DEFLATE entry) in the
// long suite. Every ZIP reader inflates the entries and compares them.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// logLines is n bytes of log text: a few MiB generated, then repeated with
// a running line number, so a large object costs little to make and still
// compresses like logs (a repeat is far outside DEFLATE's 32 KiB window).
func logLines(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 9))
	var chunk bytes.Buffer
	for chunk.Len() < 4*mib {
		fmt.Fprintf(&chunk, "INFO GET /api/v1/items/%d status=%d bytes=%d user=%08x\n", rng.IntN(5000), []int{200, 200, 404, 500}[rng.IntN(4)], rng.IntN(1<<16), rng.Uint32())
	}
	out := make([]byte, 0, n+chunk.Len())
	for i := 0; len(out) < n; i++ {
		out = fmt.Appendf(out, "2026-11-23 line-block %d\n", i)
		out = append(out, chunk.Bytes()...)
	}
	return out[:n]
}

// runCompressed runs a compression deflate request with pieces of pieceSize.
func (w *world) runCompressed(t *testing.T, prefix, dest string, pieceSize int64) *create.RunResult {
	t.Helper()
	raw, _ := json.Marshal(listRequest("duo", "src", prefix, dest, map[string]any{"compression": "deflate"}))
	r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PieceSize: pieceSize}}
	res, err := r.Run(context.Background(), raw, "e2e-"+strings.ReplaceAll(t.Name(), "/", "-"))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// methods returns each entry's method and sizes, read by Go's archive/zip.
func (w *world) methods(t *testing.T, key string) map[string]*zip.FileHeader {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.zip")
	w.srv.DownloadFile(t, "dst", key, path)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string]*zip.FileHeader{}
	for _, f := range zr.File {
		out[f.Name] = &f.FileHeader
	}
	return out
}

// manyPieces archives a log of size bytes cut into pieces of pieceSize, each
// compressed by its own read job and joined into one DEFLATE stream, with a
// random object beside it that stays STORED.
func manyPieces(t *testing.T, size int, pieceSize int64) {
	w := newWorld(t, "src")
	objects := map[string][]byte{"p/big.log": logLines(1, size), "p/random.bin": body(2, 6*mib)}
	w.put(t, "src", objects)
	res := w.runCompressed(t, "p/", "out/pieces.zip", pieceSize)
	h := w.methods(t, "out/pieces.zip")
	if f := h["big.log"]; f == nil || f.Method != zip.Deflate || f.CompressedSize64*3 > f.UncompressedSize64 {
		t.Errorf("big.log: %+v; want DEFLATE, at least 3x smaller", f)
	}
	if f := h["random.bin"]; f == nil || f.Method != zip.Store {
		t.Errorf("random.bin: %+v; want STORED (DEFLATE cannot shrink it)", f)
	}
	t.Logf("archive %d bytes for %d of sources", res.Output.Archive.Size, size+6*mib)
	w.check(t, "out/pieces.zip", wants("p/", objects))
	w.clean(t)
}

// 40 MiB in 10 pieces of 4 MiB (joined through memory, each under S3's
// minimum part): the normal suite, which make test runs with -race.
func TestCompressedObjectInManyPieces(t *testing.T) { manyPieces(t, 40*mib+4321, 4*mib) }

// 320 MiB in 10 pieces of 32 MiB: the long suite (under -race this size
// takes over 4 minutes on the shared 2-core machine).
func TestCompressedObjectOver300MiBInManyPieces(t *testing.T) {
	long(t)
	manyPieces(t, 320*mib+4321, 32*mib)
}

// An entry over 4 GiB uncompressed and a few MiB compressed: ZIP64 for the
// uncompressed size of a DEFLATE entry (version needed 45, both sizes in the
// ZIP64 extra fields), 65 pieces joined. Readers that inflate it compare its
// SHA-256.
func TestCompressedEntryOver4GiB(t *testing.T) {
	long(t)
	w := newWorld(t, "src")
	big := w.bigObject(t, "src", "z/huge.log", 4*1024*mib+12345, 3)
	small := map[string][]byte{"z/small.txt": logLines(4, 100_000)}
	w.put(t, "src", small)
	res := w.runCompressed(t, "z/", "out/huge-deflate.zip", 0) // the default piece size
	if !res.Output.Stats.Zip64 {
		t.Errorf("stats %+v: want ZIP64", res.Output.Stats)
	}
	h := w.methods(t, "out/huge-deflate.zip")
	if f := h["huge.log"]; f == nil || f.Method != zip.Deflate || f.UncompressedSize64 != uint64(big.Size) || f.CompressedSize64 >= 1<<32 {
		t.Errorf("huge.log: %+v; want DEFLATE, %d bytes uncompressed, under 4 GiB compressed", f, big.Size)
	}
	w.check(t, "out/huge-deflate.zip", append(wants("z/", small), zipcheck.Want{Name: "huge.log", Size: big.Size, SHA256: big.SHA256}))
	w.clean(t)
}
