package create

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
	"github.com/s3zip/s3zip/plan"
)

// logText is n bytes of log lines that DEFLATE shrinks about 10×.
func logText(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "2026-11-23T08:00:%02d INFO request path=/api/v1/items status=200 user=u%03d\n", r.IntN(60), r.IntN(50))
	}
	return b.Bytes()[:n]
}

// halfRandom is n bytes whose every block of `block` starts with zeros
// and ends with `random` random bytes: it shrinks, its start looks
// compressible, and each block's compressed form stays over 5 MiB when
// random is big enough.
func halfRandom(seed uint64, n, block, random int) []byte {
	b := s3test.Bytes(seed, n)
	for off := 0; off < n; off += block {
		clear(b[off:min(off+block-random, n)])
	}
	return b
}

type compressCase struct {
	name        string
	compression string
	pieceSize   int64
	objects     map[string][]byte
	deflated    []string // entries that must be DEFLATE; the others STORED
}

func TestRunCompresses(t *testing.T) {
	cases := []compressCase{
		{
			name: "deflate-small-pieces", compression: "deflate", pieceSize: 1 * mib,
			objects: map[string][]byte{
				"in/log.txt":         logText(1, 3*mib),
				"in/random.bin":      s3test.Bytes(2, 1*mib+7),
				"in/empty.txt":       {},
				"in/pieces/big.csv":  logText(3, 5*mib+12345), // 6 pieces, all joined through memory
				"in/tiny.txt":        bytes.Repeat([]byte("hello "), 50),
				"in/grows/short.txt": []byte("x"),
			},
			deflated: []string{"log.txt", "pieces/big.csv", "tiny.txt"},
		},
		{
			name: "auto-big-pieces", compression: "auto", pieceSize: 6 * mib,
			objects: map[string][]byte{
				// Two pieces whose compressed forms are over 5 MiB: joined by server-side copies.
				"in/mixed.bin":  halfRandom(4, 12*mib, 6*mib, 11*mib/2),
				"in/photo.jpg":  logText(5, 2*mib), // compressible, but named as a compressed format: stored unread
				"in/random.bin": s3test.Bytes(6, 3*mib),
				"in/gz-magic":   append([]byte{0x1f, 0x8b}, logText(7, mib)...),
				"in/notes.json": logText(8, 700*1024),
				"in/empty":      {},
			},
			deflated: []string{"mixed.bin", "notes.json"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := s3test.Start(t)
			e := &env{srv: srv, s3: srv.Client(t), want: c.objects}
			for _, b := range []string{"src", "dst", "work"} {
				srv.CreateBucket(t, b)
			}
			for k, body := range c.objects {
				srv.PutObject(t, "src", k, body)
			}
			r := e.runner()
			r.Config.PieceSize = c.pieceSize
			reads := 0
			r.Read = func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
				reads += len(in.Items)
				return (&Reader{S3: e.s3}).Handle(ctx, in)
			}
			r.Config.DefaultMaxConcurrency = 1 // reads counted without a lock
			res, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", fmt.Sprintf(`,"compression":%q`, c.compression)), "exec-compress")
			if err != nil {
				t.Fatal(err)
			}
			if reads == 0 {
				t.Fatal("no read jobs ran")
			}
			path := filepath.Join(t.TempDir(), "a.zip")
			srv.DownloadFile(t, "dst", "out/a.zip", path)
			var want []zipcheck.Want
			for k, body := range c.objects {
				want = append(want, zipcheck.WantBytes(strings.TrimPrefix(k, "in/"), body))
			}
			zipcheck.Check(t, path, want)
			checkMethods(t, path, c.deflated)
			e.assertClean(t)
			t.Logf("archive %d bytes, %d read jobs", res.Output.Archive.Size, reads)
		})
	}
}

// checkMethods checks which entries are DEFLATE (and smaller than their
// data) and that the others are STORED, with version needed 20.
func checkMethods(t *testing.T, path string, deflated []string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	want := map[string]bool{}
	for _, n := range deflated {
		want[n] = true
	}
	for _, f := range zr.File {
		switch {
		case want[f.Name] && f.Method != zip.Deflate:
			t.Errorf("%s: method %d, want DEFLATE", f.Name, f.Method)
		case want[f.Name] && f.CompressedSize64 >= f.UncompressedSize64:
			t.Errorf("%s: compressed %d bytes of %d", f.Name, f.CompressedSize64, f.UncompressedSize64)
		case !want[f.Name] && f.Method != zip.Store:
			t.Errorf("%s: method %d, want STORED", f.Name, f.Method)
		}
		if f.ReaderVersion != 20 {
			t.Errorf("%s: version needed %d, want 20", f.Name, f.ReaderVersion)
		}
		if f.Flags&0x8 != 0 {
			t.Errorf("%s: has a data descriptor", f.Name)
		}
	}
}

// TestRunCompressionNoneReadsNothing: without compression there is no read
// pass: no read job, and no GET of a source's data beyond what the layout needs.
func TestRunCompressionNoneReadsNothing(t *testing.T) {
	e := newEnv(t, []object{{"in/a.txt", 1000, s3test.ChecksumCRC32}})
	r := e.runner()
	r.Read = func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
		t.Errorf("read batch %+v ran for compression none", in)
		return nil, errors.New("no read pass expected")
	}
	if _, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", `,"compression":"none"`), "exec-none"); err != nil {
		t.Fatal(err)
	}
	e.checkArchive(t, "out/a.zip", "in/")
	e.assertClean(t)
}

// TestRunCompressFailsCleanly: a read job that fails after others wrote
// intermediate objects leaves nothing behind.
func TestRunCompressFailsCleanly(t *testing.T) {
	srv := s3test.Start(t)
	e := &env{srv: srv, s3: srv.Client(t)}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	for i := range 4 {
		srv.PutObject(t, "src", fmt.Sprintf("in/%d.txt", i), logText(uint64(i), 2*mib))
	}
	r := e.runner()
	r.Config.PieceSize = mib
	r.Config.DefaultMaxConcurrency = 1
	n := 0
	r.Read = perJob(func(ctx context.Context, job ReadJob) (*ReadResult, error) {
		if n++; n == 5 {
			return nil, &failure.SourceChangedError{Bucket: job.Source.Bucket, Key: job.Source.Key, Err: errors.New("injected")}
		}
		return (&Reader{S3: e.s3}).Read(ctx, job)
	})
	_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", `,"compression":"deflate"`), "exec-fail")
	var changed *failure.SourceChangedError
	if !errors.As(err, &changed) {
		t.Fatalf("err = %v, want SourceChangedError", err)
	}
	e.assertClean(t)
	if _, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/a.zip")}); err == nil {
		t.Fatal("an archive was left at the destination")
	}
}

func TestRequestCompressionOptions(t *testing.T) {
	cases := []struct {
		name, options, wantErr string
	}{
		{"deflate", `"compression":"deflate"`, ""},
		{"auto-level", `"compression":"auto","level":9`, ""},
		{"none", `"compression":"none"`, ""},
		{"unknown", `"compression":"zstd"`, `options.compression "zstd": want none, deflate or auto`},
		{"level-too-high", `"compression":"deflate","level":10`, "options.level 10: want 1 (fastest) to 9"},
		{"level-without-compression", `"level":3`, "options.level applies to compression deflate or auto"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(`{"source":{"bucket":"src"},"destination":{"bucket":"dst","key":"a.zip"},"options":{` + c.options + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			err = req.Validate()
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("Validate = %v, want %q", err, c.wantErr)
			}
		})
	}
}

// A planner run without the read pass (a state machine that lacks it) does
// not quietly plan STORED: it refuses before writing anything.
func TestPlanWithoutReadPassRefuses(t *testing.T) {
	e := newEnv(t, []object{{"in/a.txt", 1000, s3test.ChecksumNone}})
	pl := &Planner{S3: e.s3, Config: Config{WorkBucket: "work"}}
	_, err := pl.Plan(context.Background(), PlanInput{Request: request("duo", "in/", "out/a.zip", `,"compression":"deflate"`), Execution: "exec-direct"})
	var re *failure.RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "need the read pass") {
		t.Fatalf("err = %v, want a failure.RequestError about the read pass", err)
	}
	e.assertClean(t)
}

// options.digests with options.checksumsFile: the archive holds SHA256SUMS
// as one more entry, every reader reads it, and `sha256sum -c` passes on
// the extracted files; the report gives every entry's digest. Run with and
// without compression (with it, a many-piece entry gets a hash job of its own).
func TestRunChecksumsFile(t *testing.T) {
	objects := map[string][]byte{
		"in/log.txt":                  logText(1, 3*mib),
		"in/random.bin":               s3test.Bytes(2, 500*1024),
		"in/empty.txt":                {},
		"in/dir/name with spaces.csv": logText(3, 100*1024),
	}
	for _, compression := range []string{"none", "deflate"} {
		t.Run(compression, func(t *testing.T) {
			srv := s3test.Start(t)
			e := &env{srv: srv, s3: srv.Client(t)}
			for _, b := range []string{"src", "dst", "work"} {
				srv.CreateBucket(t, b)
			}
			for k, body := range objects {
				srv.PutObject(t, "src", k, body)
			}
			r := e.runner()
			r.Config.PieceSize = mib
			_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", fmt.Sprintf(`,"compression":%q,"digests":["sha256"],"checksumsFile":"SHA256SUMS"`, compression)), "exec-sums")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "a.zip")
			srv.DownloadFile(t, "dst", "out/a.zip", path)
			var sums bytes.Buffer
			var want []zipcheck.Want
			for k, body := range objects {
				name := strings.TrimPrefix(k, "in/")
				want = append(want, zipcheck.WantBytes(name, body))
				fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(body), name)
			}
			zr, err := zip.OpenReader(path)
			if err != nil {
				t.Fatal(err)
			}
			var listed []byte
			for _, f := range zr.File {
				if f.Name == "SHA256SUMS" {
					rc, _ := f.Open()
					listed, _ = io.ReadAll(rc)
					rc.Close()
				}
			}
			zr.Close()
			if got, wantLines := sortedLines(listed), sortedLines(sums.Bytes()); got != wantLines {
				t.Errorf("SHA256SUMS:\n%s\nwant the lines:\n%s", listed, wantLines)
			}
			zipcheck.Check(t, path, append(want, zipcheck.WantBytes("SHA256SUMS", listed)))
			out := filepath.Join(dir, "x")
			if b, err := exec.Command("unzip", "-q", path, "-d", out).CombinedOutput(); err != nil {
				t.Fatalf("unzip: %v\n%s", err, b)
			}
			check := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
			check.Dir = out
			if b, err := check.CombinedOutput(); err != nil {
				t.Fatalf("sha256sum -c: %v\n%s", err, b)
			}
			var report Report
			if err := json.Unmarshal(srv.GetObject(t, "dst", "out/a.zip.report.json"), &report); err != nil {
				t.Fatal(err)
			}
			for _, re := range report.Entries {
				if len(re.SHA256) != 64 {
					t.Errorf("report entry %s has SHA-256 %q", re.Name, re.SHA256)
				}
			}
			e.assertClean(t)
		})
	}
}

func sortedLines(b []byte) string {
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}

func TestChecksumsFileEscapesNewlines(t *testing.T) {
	got, err := checksumsFile([]plan.Entry{{Name: "a.txt", Size: 1, SHA256: strings.Repeat("a", 64)}, {Name: "d/", Dir: true}, {Name: "odd\nname", Size: 1, SHA256: strings.Repeat("b", 64)}})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("a", 64) + "  a.txt\n\\" + strings.Repeat("b", 64) + "  odd\\nname\n"
	if string(got) != want {
		t.Errorf("checksums file %q, want %q", got, want)
	}
	if _, err := checksumsFile([]plan.Entry{{Name: "unread", Size: 5}}); err == nil {
		t.Error("an entry without a digest was listed")
	}
}

// A source rewritten after the listing and before its read: the read job's
// If-Match fails, the run fails with failure.SourceChangedError, nothing is left.
func TestRunCompressSourceChangedBeforeRead(t *testing.T) {
	srv := s3test.Start(t)
	e := &env{srv: srv, s3: srv.Client(t)}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	srv.PutObject(t, "src", "in/a.txt", logText(1, 2*mib))
	srv.PutObject(t, "src", "in/b.txt", logText(2, 2*mib))
	r := e.runner()
	r.Config.DefaultMaxConcurrency = 1
	changed := false
	r.Read = perJob(func(ctx context.Context, job ReadJob) (*ReadResult, error) {
		if !changed {
			changed = true
			srv.PutObject(t, "src", "in/b.txt", logText(3, 2*mib))
		}
		return (&Reader{S3: e.s3}).Read(ctx, job)
	})
	_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", `,"compression":"deflate"`), "exec-changed")
	var sce *failure.SourceChangedError
	if !errors.As(err, &sce) || sce.Key != "in/b.txt" {
		t.Fatalf("err = %v, want failure.SourceChangedError for in/b.txt", err)
	}
	e.assertClean(t)
}

func TestReadJobs(t *testing.T) {
	entries := []plan.Entry{
		{Name: "a.log", Size: 25},
		{Name: "photo.JPG", Size: 5},
		{Name: "empty", Size: 0},
		{Name: "d/", Dir: true},
		{Name: "b.txt", Size: 10},
	}
	type job struct{ entry, piece, pieces int }
	cases := []struct {
		name string
		opts Options
		want []job
		hash []int // entries with a hash job
	}{
		{"deflate-cuts-pieces", Options{Compression: "deflate"}, []job{{0, 0, 3}, {0, 1, 3}, {0, 2, 3}, {1, 0, 1}, {4, 0, 1}}, nil},
		{"auto-skips-compressed-extensions", Options{Compression: "auto"}, []job{{0, 0, 3}, {0, 1, 3}, {0, 2, 3}, {4, 0, 1}}, nil},
		{"digests-only-hash-whole-objects", Options{Digests: []string{"sha256"}}, nil, []int{0, 1, 4}},
		{"digests-with-auto", Options{Compression: "auto", Digests: []string{"sha256"}}, []job{{0, 0, 3}, {0, 1, 3}, {0, 2, 3}, {4, 0, 1}}, []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []job
			var hash []int
			for _, j := range readJobs(entries, c.opts, 10, "w", "p/") {
				if j.Hash {
					if j.Length != entries[j.Entry].Size || j.Offset != 0 || !j.SHA256 {
						t.Errorf("hash job %+v does not read its whole object", j)
					}
					hash = append(hash, j.Entry)
					continue
				}
				got = append(got, job{j.Entry, j.Piece, j.Pieces})
				if want := j.Pieces == 1 && c.opts.sha256(); j.SHA256 != want {
					t.Errorf("job %+v: SHA256 %v, want %v", j, j.SHA256, want)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) || fmt.Sprint(hash) != fmt.Sprint(c.hash) {
				t.Errorf("jobs %v hash %v, want %v and %v", got, hash, c.want, c.hash)
			}
		})
	}
}

// Joined pieces are deleted as soon as their entry's object is made, before
// the layout is built.
func TestJoinedPiecesDeletedEarly(t *testing.T) {
	srv := s3test.Start(t)
	e := &env{srv: srv, s3: srv.Client(t)}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	// 12 pieces that shrink by a third: an archive big enough for worker parts.
	srv.PutObject(t, "src", "in/a.bin", halfRandom(1, 12*mib, mib, 700<<10))
	r := e.runner()
	r.Config.PieceSize = mib
	var during []string
	w := &Worker{S3: e.s3, Config: r.Config.Defaults()}
	r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
		during = listKeys(t, e.s3, "work", in.BatchInput.Job.WorkPrefix+"deflate/")
		return w.Handle(ctx, in)
	}
	if _, err := r.Run(context.Background(), request("stream", "in/", "out/a.zip", `,"compression":"deflate"`), "exec-early"); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || !strings.HasSuffix(during[0], "deflate/0") {
		// (No batch at all would leave during empty and fail here too.)
		t.Errorf("while building, the work prefix held %v, want only the joined deflate/0", during)
	}
	e.assertClean(t)
}

func listKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// perJob makes a batch function of a per-job one, as Reader.Handle runs Read.
func perJob(read func(context.Context, ReadJob) (*ReadResult, error)) ReadBatchFunc {
	return func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
		out := &ReadBatchResult{}
		for _, j := range in.Items {
			res, err := read(ctx, j)
			if err != nil {
				return nil, err
			}
			out.Results = append(out.Results, *res)
		}
		return out, nil
	}
}
