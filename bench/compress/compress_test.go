// Package compress is `make bench-compress`: s3zip --compress deflate
// against Info-ZIP's `zip -6` on the same files, and what --compress auto
// costs on incompressible data.
//
//	S3ZIP_BENCH_COMPRESS=1 go test ./bench/compress -run Bench -v   (make bench-compress)
package compress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

const mib = 1 << 20

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// corpus writes about total bytes of logs, CSV, JSON and source text, in
// files of 64 KiB to 48 MiB, and returns their names and contents.
func corpus(total int) map[string][]byte {
	r := rand.New(rand.NewPCG(13, 17))
	files := map[string][]byte{}
	paths := []string{"/api/v1/users", "/api/v1/orders", "/static/app.js", "/healthz", "/api/v2/search?q=shoes"}
	words := []string{"func", "return", "if", "err", "nil", "for", "range", "ctx", "value", "result", "string", "int", "case", "switch"}
	sizes := []int{64 << 10, 300 << 10, 1 * mib, 4 * mib, 16 * mib, 48 * mib}
	for i, n := 0, 0; n < total; i++ {
		size := min(sizes[r.IntN(len(sizes))], total-n)
		var b bytes.Buffer
		var name string
		switch i % 4 {
		case 0:
			name = fmt.Sprintf("logs/app-%03d.log", i)
			for b.Len() < size {
				fmt.Fprintf(&b, "2026-11-%02dT%02d:%02d:%02d.%03dZ %s request method=GET path=%s status=%d bytes=%d latency_ms=%d ip=10.%d.%d.%d\n",
					1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), []string{"INFO", "INFO", "WARN", "DEBUG"}[r.IntN(4)],
					paths[r.IntN(len(paths))], 200+r.IntN(4)*100, r.IntN(100000), r.IntN(900), r.IntN(256), r.IntN(256), r.IntN(256))
			}
		case 1:
			name = fmt.Sprintf("csv/orders-%03d.csv", i)
			for j := 0; b.Len() < size; j++ {
				fmt.Fprintf(&b, "%d,%s,%d.%02d,%s,%d,2026-%02d-%02d\n", j, []string{"alice", "bob", "carol", "dave", "erin"}[r.IntN(5)], r.IntN(10000), r.IntN(100), []string{"EUR", "USD", "GBP"}[r.IntN(3)], r.IntN(50), 1+r.IntN(12), 1+r.IntN(28))
			}
		case 2:
			name = fmt.Sprintf("json/events-%03d.jsonl", i)
			for j := 0; b.Len() < size; j++ {
				fmt.Fprintf(&b, `{"id":%d,"user":"u%05d","event":"%s","ok":%t,"value":%.4f,"tags":["%s","%s"]}`+"\n", j, r.IntN(50000), []string{"click", "view", "buy"}[r.IntN(3)], r.IntN(2) == 0, r.Float64(), words[r.IntN(len(words))], words[r.IntN(len(words))])
			}
		default:
			name = fmt.Sprintf("src/file-%03d.go", i)
			for b.Len() < size {
				fmt.Fprintf(&b, "\t%s %s := %s(%s, %d)\n", words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(100))
			}
		}
		files[name] = b.Bytes()[:size]
		n += size
	}
	return files
}

// upload puts files under prefix in bucket "src", a few at a time.
func upload(t *testing.T, srv *s3test.Server, prefix string, files map[string][]byte) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for name, body := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			srv.PutObject(t, "src", prefix+name, body)
		}()
	}
	wg.Wait()
}

func runS3zip(t *testing.T, srv *s3test.Server, prefix, dest, compression string, workers, level int) (time.Duration, int64) {
	t.Helper()
	r := &create.Runner{S3: srv.Client(t), Config: create.Config{WorkBucket: "work"}}
	req, _ := json.Marshal(create.Request{Source: create.Source{Bucket: "src", Prefix: prefix}, Destination: create.Destination{Bucket: "dst", Key: dest},
		Options: create.Options{Compression: compression, MaxConcurrency: workers, Level: level}})
	start := time.Now()
	res, err := r.Run(context.Background(), req, "bench-"+filepath.Base(dest))
	if err != nil {
		t.Fatalf("s3zip %s: %v", dest, err)
	}
	return time.Since(start), res.Output.Archive.Size
}

func TestBenchCompress(t *testing.T) {
	if os.Getenv("S3ZIP_BENCH_COMPRESS") != "1" {
		t.Skip("benchmark: run with S3ZIP_BENCH_COMPRESS=1 (make bench-compress)")
	}
	total := envInt("BENCH_COMPRESS_MB", 256) * mib
	workers := envInt("BENCH_WORKERS", 4)
	level := envInt("BENCH_LEVEL", 0) // 0: s3zip's default
	var lines []string
	say := func(format string, args ...any) {
		lines = append(lines, fmt.Sprintf(format, args...))
		t.Logf(format, args...)
	}
	srv := s3test.Start(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}

	// What auto costs on incompressible data (photos): random bytes named
	// .bin, so auto must read a sample of each to decide.
	random := map[string][]byte{}
	for i := range 16 {
		random[fmt.Sprintf("img-%02d.bin", i)] = s3test.Bytes(uint64(i), 4*mib+i)
	}
	upload(t, srv, "photos/", random)
	// Alternated, three of each, medians: one run is too noisy on a shared machine.
	var nones, autos []float64
	for i := range 3 {
		d, _ := runS3zip(t, srv, "photos/", fmt.Sprintf("none-%d.zip", i), "none", workers, 0)
		nones = append(nones, d.Seconds())
		d, _ = runS3zip(t, srv, "photos/", fmt.Sprintf("auto-%d.zip", i), "auto", workers, level)
		autos = append(autos, d.Seconds())
	}
	none, auto := median(nones), median(autos)
	say("auto_incompressible: none %.2f s, auto %.2f s (medians of 3; %d objects, %d MiB): auto_vs_none=%.2f", none, auto, len(random), 64, auto/none)

	files := corpus(total)
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, "corpus", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	upload(t, srv, "corpus/", files)

	start := time.Now()
	zip := exec.Command("zip", "-6", "-r", "-q", filepath.Join(dir, "ref.zip"), ".")
	zip.Dir = filepath.Join(dir, "corpus")
	if out, err := zip.CombinedOutput(); err != nil {
		t.Fatalf("zip -6: %v\n%s", err, out)
	}
	zipTime := time.Since(start)
	st, err := os.Stat(filepath.Join(dir, "ref.zip"))
	if err != nil {
		t.Fatal(err)
	}
	s3Time, s3Size := runS3zip(t, srv, "corpus/", "corpus.zip", "deflate", workers, level)
	say("corpus: %d files, %d MiB; zip -6: %d bytes in %.2f s; s3zip --compress deflate --level %d --workers %d: %d bytes in %.2f s",
		len(files), total/mib, st.Size(), zipTime.Seconds(), level, workers, s3Size, s3Time.Seconds())
	say("compress_size_vs_zip=%.4f", float64(s3Size)/float64(st.Size()))
	say("compress_speedup_vs_zip=%.2f", zipTime.Seconds()/s3Time.Seconds())
	if out := os.Getenv("BENCH_OUT"); out != "" {
		os.WriteFile(out, []byte(fmt.Sprintln(joinLines(lines))), 0o644)
	}
}

func joinLines(l []string) string {
	var b bytes.Buffer
	for i, s := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
