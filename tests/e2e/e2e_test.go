// End-to-end tests: the workflow (planner, workers, finalizer, abort — the
// code the Lambdas run) against a real S3-compatible server on loopback,
// every archive read back by seven ZIP readers and compared to the sources.
//
// The long cases (archives over 4 GiB, an object over 5 GiB, more than
// 65,535 entries) run when S3ZIP_LONG=1 (make test-long; CI runs them).
package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

const mib = 1 << 20

var strategies = []string{"stream", "duo", "chain", "auto"}

func long(t *testing.T) {
	t.Helper()
	if os.Getenv("S3ZIP_LONG") != "1" {
		t.Skip("long case: run with S3ZIP_LONG=1 (make test-long)")
	}
}

// world is a server with buckets and the objects put into it.
type world struct {
	srv *s3test.Server
	s3  *s3.Client
}

func newWorld(t *testing.T, buckets ...string) *world {
	t.Helper()
	srv := s3test.Start(t)
	w := &world{srv: srv, s3: srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})}
	for _, b := range append([]string{"dst", "work"}, buckets...) {
		srv.CreateBucket(t, b)
	}
	return w
}

func body(seed uint64, size int) []byte { return s3test.Bytes(seed, size) }

// put uploads objects concurrently and returns what the archive should hold.
func (w *world) put(t *testing.T, bucket string, objects map[string][]byte, opts ...s3test.PutOption) {
	t.Helper()
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	var g errgroup.Group
	g.SetLimit(32)
	for _, k := range keys {
		g.Go(func() error {
			w.srv.PutObject(t, bucket, k, objects[k], opts...)
			return nil
		})
	}
	g.Wait()
}

func (w *world) run(t *testing.T, req map[string]any) (*create.RunResult, error) {
	t.Helper()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 3}}
	return r.Run(context.Background(), raw, "e2e-"+strings.ReplaceAll(t.Name(), "/", "-"))
}

func listRequest(strategy, bucket, prefix, dest string, opts map[string]any) map[string]any {
	o := map[string]any{"strategy": strategy}
	for k, v := range opts {
		o[k] = v
	}
	return map[string]any{
		"source":      map[string]any{"bucket": bucket, "prefix": prefix},
		"destination": map[string]any{"bucket": "dst", "key": dest},
		"options":     o,
	}
}

// check downloads the archive and reads it with every reader.
func (w *world) check(t *testing.T, key string, want []zipcheck.Want) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.zip")
	w.srv.DownloadFile(t, "dst", key, path)
	zipcheck.Check(t, path, want)
}

// clean asserts that no work object and no multipart upload is left.
func (w *world) clean(t *testing.T) {
	t.Helper()
	for _, l := range w.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}

func (w *world) absent(t *testing.T, key string) {
	t.Helper()
	if _, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: &key}); err == nil {
		t.Errorf("s3://dst/%s exists after a failed run", key)
	}
}

func wants(prefix string, objects map[string][]byte) []zipcheck.Want {
	var out []zipcheck.Want
	for k, b := range objects {
		name := strings.TrimPrefix(k, prefix)
		if strings.HasSuffix(name, "/") {
			out = append(out, zipcheck.WantDir(name))
			continue
		}
		out = append(out, zipcheck.WantBytes(name, b))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// build runs one archive for every strategy and checks it.
func buildAll(t *testing.T, w *world, bucket, prefix string, objects map[string][]byte, opts map[string]any) {
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			dest := "out/" + s + ".zip"
			res, err := w.run(t, listRequest(s, bucket, prefix, dest, opts))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d entries, %d bytes, streamed %d, copied %d", s, res.Output.Stats.Entries, res.Output.Archive.Size, res.Output.Stats.StreamedBytesActual, res.Output.Stats.CopiedBytesActual)
			w.check(t, dest, wants(prefix, objects))
			w.clean(t)
		})
	}
}

func TestFewSmallObjects(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{"p/a.txt": body(1, 10), "p/b.txt": body(2, 1000), "p/c.bin": body(3, 100_000)}
	w.put(t, "src", objs)
	buildAll(t, w, "src", "p/", objs, nil)
}

func TestChallengeScaledDown(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 24; i++ {
		size := int(5*mib + rng.NormFloat64()*mib)
		objs[fmt.Sprintf("c/%02x/%064x", i, rng.Uint64())] = body(uint64(i), size)
	}
	w.put(t, "src", objs)
	buildAll(t, w, "src", "c/", objs, nil)
}

func TestUnicodeAndNestedNames(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{
		"u/日本語/ファイル.txt": body(1, 100), "u/ελληνικά/α.txt": body(2, 200), "u/emoji/🙂🎉.bin": body(3, 6*mib),
		"u/a/b/c/d/e/f/g.txt": body(4, 1), "u/spaces in name/x y.txt": body(5, 50), "u/Ünïcödé.TXT": body(6, 3*mib),
	}
	w.put(t, "src", objs)
	buildAll(t, w, "src", "u/", objs, nil)
}

func TestZeroByteObjectsAndFolders(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{"z/empty1": {}, "z/dir/": {}, "z/dir/empty2": {}, "z/dir/one": body(1, 1), "z/big": body(2, 5*mib+1)}
	w.put(t, "src", objs)
	buildAll(t, w, "src", "z/", objs, nil)
}

func TestDuplicateNames(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{"d/x/a.jpg": body(1, 10), "d/y/a.jpg": body(2, 20), "d/z/a.jpg": body(3, 30), "d/b.jpg": body(4, 40)}
	w.put(t, "src", objs)
	for _, s := range strategies {
		t.Run(s+"/error", func(t *testing.T) {
			_, err := w.run(t, listRequest(s, "src", "d/", "out/dup.zip", map[string]any{"names": "flat"}))
			var re *failure.RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), `"a.jpg"`) {
				t.Fatalf("err = %v, want a RequestError naming a.jpg", err)
			}
			w.absent(t, "out/dup.zip")
			w.clean(t)
		})
		t.Run(s+"/suffix", func(t *testing.T) {
			dest := "out/" + s + "-suffix.zip"
			if _, err := w.run(t, listRequest(s, "src", "d/", dest, map[string]any{"names": "flat", "duplicates": "suffix"})); err != nil {
				t.Fatal(err)
			}
			// Listing order is by key: x/a.jpg keeps its name, y and z get suffixes.
			w.check(t, dest, []zipcheck.Want{
				zipcheck.WantBytes("a.jpg", objs["d/x/a.jpg"]), zipcheck.WantBytes("a (2).jpg", objs["d/y/a.jpg"]),
				zipcheck.WantBytes("a (3).jpg", objs["d/z/a.jpg"]), zipcheck.WantBytes("b.jpg", objs["d/b.jpg"]),
			})
			w.clean(t)
		})
	}
}

func TestListingPagination(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{}
	for i := 0; i < 1100; i++ {
		objs[fmt.Sprintf("many/%04d.txt", i)] = body(uint64(i), i%50)
	}
	w.put(t, "src", objs)
	buildAll(t, w, "src", "many/", objs, nil)
}

func TestSourceChecksumKinds(t *testing.T) {
	w := newWorld(t, "src")
	all := map[string][]byte{}
	add := func(key string, b []byte, opts ...s3test.PutOption) {
		w.srv.PutObject(t, "src", key, b, opts...)
		all[key] = b
	}
	add("k/crc32-small", body(1, 2*mib), s3test.WithChecksum(s3test.ChecksumCRC32))
	add("k/crc32-big", body(2, 7*mib), s3test.WithChecksum(s3test.ChecksumCRC32))
	add("k/sha256-big", body(3, 6*mib), s3test.WithChecksum(s3test.ChecksumSHA256))
	add("k/none-big", body(4, 8*mib))
	add("k/none-small", body(5, 1*mib))
	parts := [][]byte{body(6, 5*mib), body(7, 3*mib)}
	w.srv.PutMultipartObject(t, "src", "k/multipart-composite", parts, s3test.WithChecksum(s3test.ChecksumCRC32))
	all["k/multipart-composite"] = append(append([]byte{}, parts[0]...), parts[1]...)
	buildAll(t, w, "src", "k/", all, nil)
}

// watch has a client show every request's input to see before it is sent.
func watch(see func(params any)) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("e2e-watch", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				see(in.Parameters)
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	}
}

// Chains and carried copies take objects' CRC-32s from S3's answers to
// whole-object copies instead of asking for them beforehand: here with
// sources of every checksum kind (a composite answers with no usable CRC,
// so that round is built plain and the object's CRC is asked for), and the
// planner's and workers' HEADs counted.
func TestCRCsFromCopies(t *testing.T) {
	w := newWorld(t, "src")
	all := map[string][]byte{}
	kinds := []s3test.PutOption{s3test.WithChecksum(s3test.ChecksumCRC32), s3test.WithChecksum(s3test.ChecksumSHA256), nil}
	for i := 0; i < 9; i++ {
		key := fmt.Sprintf("k/%02d-small", i)
		b := body(uint64(i), (1+i%3)*mib/2)
		if opt := kinds[i%3]; opt != nil {
			w.srv.PutObject(t, "src", key, b, opt)
		} else {
			w.srv.PutObject(t, "src", key, b)
		}
		all[key] = b
	}
	for i, opt := range kinds {
		key := fmt.Sprintf("k/%02d-big", 20+i)
		b := body(uint64(20+i), 6*mib+i)
		if opt != nil {
			w.srv.PutObject(t, "src", key, b, opt)
		} else {
			w.srv.PutObject(t, "src", key, b)
		}
		all[key] = b
	}
	one := [][]byte{body(40, 2*mib)}
	w.srv.PutMultipartObject(t, "src", "k/05-composite", one, s3test.WithChecksum(s3test.ChecksumCRC32))
	all["k/05-composite"] = one[0]

	for _, s := range []string{"chain", "duo"} {
		t.Run(s, func(t *testing.T) {
			counter := s3metrics.New()
			var mu sync.Mutex
			asked := map[string]int{} // source key → HEADs
			c := w.srv.Client(t, func(o *s3.Options) {
				o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			}, counter.Option(), watch(func(params any) {
				if h, ok := params.(*s3.HeadObjectInput); ok && aws.ToString(h.Bucket) == "src" {
					mu.Lock()
					asked[aws.ToString(h.Key)]++
					mu.Unlock()
				}
			}))
			dest := "out/crc-" + s + ".zip"
			raw, _ := json.Marshal(listRequest(s, "src", "k/", dest, nil))
			r := &create.Runner{S3: c, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 3}}
			res, err := r.Run(context.Background(), raw, "e2e-crc-"+s)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d entries; sources asked for: %v; requests %v", s, res.Output.Stats.Entries, asked, counter.Sorted())
			// Duo copies the big objects whole, each carried by the part
			// ending with its header, and its workers ask S3 for the CRC-32
			// it stores of an entry they stream whole (a HEAD, GET-priced)
			// before they would probe with a copy (PUT-priced): at most
			// once a source, checked below. Chain learns every CRC but
			// those of objects copied in a round that cannot carry a
			// checksum (here one big object) and of the composite.
			want := map[string]int{"chain": 2, "duo": len(all)}[s]
			if len(asked) > want {
				t.Errorf("%d of %d sources asked for (%v), want at most %d", len(asked), len(all), asked, want)
			}
			for k, n := range asked {
				if n > 1 {
					t.Errorf("%s asked for %d times", k, n)
				}
			}
			w.check(t, dest, wants("k/", all))
			w.clean(t)
		})
	}
}

// Duo streams the start of an object and copies the rest when that makes
// the parts fit: the part that streams the start carries the copy and
// combines the CRC-32 from the bytes it streamed and S3's answer for the
// rest, unless S3 stores the object's CRC-32 (then the worker's HEAD gives
// it; versitygw answers a ranged copy of such an object with the stored
// checksum, and the worker streams that range instead). Nothing is read, and
// S3 computes no CRC, just to learn one.
func TestCRCsOfCopiedTails(t *testing.T) {
	w := newWorld(t, "src")
	all := map[string][]byte{}
	for i, opt := range []s3test.PutOption{nil, s3test.WithChecksum(s3test.ChecksumCRC32), nil, s3test.WithChecksum(s3test.ChecksumSHA256), nil} {
		key := fmt.Sprintf("t/%02d.bin", i)
		b := body(uint64(60+i), 16*mib+1000*i)
		if opt != nil {
			w.srv.PutObject(t, "src", key, b, opt)
		} else {
			w.srv.PutObject(t, "src", key, b)
		}
		all[key] = b
	}
	one := [][]byte{body(70, 5*mib), body(71, 11*mib)}
	w.srv.PutMultipartObject(t, "src", "t/09-composite", one, s3test.WithChecksum(s3test.ChecksumCRC32))
	all["t/09-composite"] = append(append([]byte{}, one[0]...), one[1]...)

	var mu sync.Mutex
	probes, gets := 0, map[string]int64{}
	c := w.srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}, watch(func(params any) {
		mu.Lock()
		defer mu.Unlock()
		switch v := params.(type) {
		case *s3.UploadPartCopyInput:
			if strings.Contains(aws.ToString(v.Key), "crc-probe") {
				probes++
			}
		case *s3.GetObjectInput:
			if aws.ToString(v.Bucket) == "src" && v.Range == nil {
				gets[aws.ToString(v.Key)]++
			}
		}
	}))
	raw, _ := json.Marshal(listRequest("duo", "src", "t/", "out/tails.zip", nil))
	r := &create.Runner{S3: c, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 1}}
	res, err := r.Run(context.Background(), raw, "e2e-tails")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("duo: %d parts (%d copy), streamed %d, copied %d; CRC probes %d, whole-object GETs %v",
		res.Output.Stats.Parts, res.Output.Stats.CopyParts, res.Output.Stats.StreamedBytesActual, res.Output.Stats.CopiedBytesActual, probes, gets)
	if res.Output.Stats.CopyParts < 3 {
		t.Fatalf("%d copy parts: the data set no longer makes duo copy tails", res.Output.Stats.CopyParts)
	}
	if probes != 0 {
		t.Errorf("%d CRC probes (server-side copies made only to learn a CRC), want none", probes)
	}
	for k, n := range gets {
		if k != "t/09-composite" {
			t.Errorf("%s read whole %d times to learn its CRC", k, n)
		}
	}
	w.check(t, "out/tails.zip", wants("t/", all))
	w.clean(t)
}

func TestManifestAcrossBuckets(t *testing.T) {
	w := newWorld(t, "src", "src2", "ctl")
	a, b, c := body(1, 6*mib), body(2, 1000), body(3, 2*mib)
	w.srv.PutObject(t, "src", "photos/a.jpg", a)
	w.srv.PutObject(t, "src2", "docs/b.txt", b)
	w.srv.PutObject(t, "src2", "c.bin", c)
	w.srv.PutObject(t, "ctl", "lists/m.csv", []byte("key,name,bucket\nphotos/a.jpg,pictures/holiday.jpg,src\ndocs/b.txt,readme.txt,src2\n"))
	w.srv.PutObject(t, "ctl", "lists/m.jsonl", []byte(`{"key":"c.bin","name":"data/c.bin","bucket":"src2"}`+"\n"+`{"key":"photos/a.jpg"}`+"\n"))
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			for _, m := range []struct {
				key  string
				want []zipcheck.Want
			}{
				{"lists/m.csv", []zipcheck.Want{zipcheck.WantBytes("pictures/holiday.jpg", a), zipcheck.WantBytes("readme.txt", b)}},
				{"lists/m.jsonl", []zipcheck.Want{zipcheck.WantBytes("data/c.bin", c), zipcheck.WantBytes("photos/a.jpg", a)}},
			} {
				dest := "out/" + s + strings.ReplaceAll(m.key, "/", "-") + ".zip"
				_, err := w.run(t, map[string]any{
					"source":      map[string]any{"manifest": map[string]any{"bucket": "ctl", "key": m.key}, "bucket": "src"},
					"destination": map[string]any{"bucket": "dst", "key": dest},
					"options":     map[string]any{"strategy": s},
				})
				if err != nil {
					t.Fatal(err)
				}
				w.check(t, dest, m.want)
				w.clean(t)
			}
		})
	}
}

func TestEmptyPrefixFailsCleanly(t *testing.T) {
	w := newWorld(t, "src")
	w.srv.PutObject(t, "src", "elsewhere/a", body(1, 10))
	for _, s := range strategies {
		_, err := w.run(t, listRequest(s, "src", "nothing/", "out/none.zip", nil))
		var re *failure.RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "no objects") {
			t.Fatalf("%s: err = %v, want a RequestError saying there are no objects", s, err)
		}
		w.absent(t, "out/none.zip")
		w.clean(t)
	}
}

func TestMoreThan65535Entries(t *testing.T) {
	long(t)
	w := newWorld(t, "src")
	objs := map[string][]byte{}
	for i := 0; i < 65_540; i++ {
		objs[fmt.Sprintf("e/%05d", i)] = []byte(fmt.Sprint(i))
	}
	w.put(t, "src", objs)
	buildAll(t, w, "src", "e/", objs, nil)
}

// bigObject uploads size bytes of a cheap pattern as a multipart object and
// returns its contents' description for the readers.
func (w *world) bigObject(t *testing.T, bucket, key string, size int64, seed byte) zipcheck.Want {
	t.Helper()
	ctx := context.Background()
	up, err := w.s3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	const partSize = 256 * mib
	chunk := make([]byte, partSize)
	for i := range chunk {
		chunk[i] = byte(i*7) ^ seed
	}
	h := newHasher()
	var parts []*s3.UploadPartOutput
	for off, n := int64(0), int32(1); off < size; off, n = off+partSize, n+1 {
		b := chunk[:min(partSize, size-off)]
		h.Write(b)
		out, err := w.s3.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, out)
	}
	completeParts(t, w.s3, bucket, key, up.UploadId, parts)
	return zipcheck.Want{Name: key, Size: size, SHA256: h.sum()}
}

func TestArchiveOver4GiBWithObjectOver5GiB(t *testing.T) {
	long(t)
	w := newWorld(t, "src")
	big := w.bigObject(t, "src", "huge/video.bin", 5*1024*mib+12345, 1)
	small := map[string][]byte{"huge/after-1.txt": body(1, 100), "huge/after-2.bin": body(2, 6*mib)}
	w.put(t, "src", small)
	want := append(wants("huge/", small), zipcheck.Want{Name: "video.bin", Size: big.Size, SHA256: big.SHA256})
	for _, s := range []string{"duo"} { // stream would move 5 GiB through one process: the duo case copies it in ranges
		dest := "out/" + s + "-huge.zip"
		res, err := w.run(t, listRequest(s, "src", "huge/", dest, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Output.Stats.Zip64 || res.Output.Stats.CopyParts < 2 {
			t.Errorf("stats %+v: want ZIP64 and the big object copied in at least 2 ranges", res.Output.Stats)
		}
		w.check(t, dest, want)
		w.clean(t)
	}
}
