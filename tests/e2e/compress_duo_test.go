package e2e_test

// A compressed duo run, seeded: 200 objects of mixed sizes, contents and
// checksum kinds, archived with --strategy duo --compress auto, every part
// as the workers uploaded it checked at Complete, every archive read by the
// seven readers. A CRC probe the worker had given up on that landed in a
// part's number after the part's upload would fail it at random with
// EntityTooSmall (create.TestLateProbeCannotReplaceAPart holds that case
// exactly). The normal suite runs 2 seeds; S3ZIP_COMPRESSED_RUNS=30 runs 30
// in a row (a few minutes):
//
//	S3ZIP_COMPRESSED_RUNS=30 go test -count=1 -timeout 30m -v -run TestCompressedDuoSeededRuns ./tests/e2e/

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// mixedSources puts n objects of mixed sizes (half under 256 KiB, a tenth
// from 5 to 9 MiB, the rest up to 2.25 MiB), contents (logs, random bytes,
// random bytes named .jpg, half of each) and stored checksums (none,
// CRC-32, CRC64NVME, SHA-256) under prefix, and returns them by key.
func (w *world) mixedSources(t *testing.T, seed uint64, n int, prefix string) map[string][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 21))
	logs := logLines(seed, 10*mib) // each log a slice of it
	kinds := []s3test.Checksum{s3test.ChecksumNone, s3test.ChecksumCRC32, s3test.ChecksumCRC64NVME, s3test.ChecksumSHA256}
	objects := map[string][]byte{}
	for i := 0; i < n; i++ {
		size := rng.IntN(256 << 10)
		switch r := rng.IntN(10); {
		case r == 9:
			size = 5*mib + rng.IntN(4*mib)
		case r >= 5:
			size = 256<<10 + rng.IntN(2*mib)
		}
		text := func(n int) []byte { off := rng.IntN(len(logs) - n + 1); return logs[off : off+n] }
		s := seed*1000 + uint64(i)
		var b []byte
		ext := []string{".log", ".bin", ".jpg", ".dat"}[rng.IntN(4)]
		switch ext {
		case ".log":
			b = text(size)
		case ".dat":
			b = append(append([]byte(nil), text(size/2)...), body(s, size-size/2)...)
		default:
			b = body(s, size)
		}
		key := fmt.Sprintf("%s%03d%s", prefix, i, ext)
		objects[key] = b
		w.srv.PutObject(t, "src", key, b, s3test.WithChecksum(kinds[rng.IntN(len(kinds))]))
	}
	return objects
}

func TestCompressedDuoSeededRuns(t *testing.T) {
	runs := 2
	if v := os.Getenv("S3ZIP_COMPRESSED_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("S3ZIP_COMPRESSED_RUNS=%q: want a number of runs", v)
		}
		runs = n
	}
	passed := 0
	for seed := 1; seed <= runs; seed++ {
		ok := t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			w := newWorld(t, "src")
			prefix := fmt.Sprintf("mixed-%d/", seed)
			objects := w.mixedSources(t, uint64(seed), 200, prefix)
			client := &s3test.PartSizes{Client: w.s3, Bucket: "dst"}
			raw, _ := json.Marshal(listRequest("duo", "src", prefix, "out/mixed.zip", map[string]any{"compression": "auto"}))
			r := &create.Runner{S3: client, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 3}}
			res, err := r.Run(context.Background(), raw, fmt.Sprintf("e2e-compressed-duo-%d", seed))
			if err != nil {
				t.Fatal(err)
			}
			if p := client.Problems(); len(p) > 0 || client.Uploads() == 0 {
				t.Errorf("%d completions checked; parts as the workers uploaded them: %v", client.Uploads(), p)
			}
			st := res.Output.Stats
			t.Logf("seed %d: %d entries, %d bytes, %d parts (%d copied)", seed, st.Entries, res.Output.Archive.Size, st.Parts, st.CopyParts)
			w.check(t, "out/mixed.zip", wants(prefix, objects))
			w.clean(t)
			if _, err := w.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/mixed.zip")}); err != nil {
				t.Fatal(err)
			}
		})
		if ok {
			passed++
		}
	}
	t.Logf("compressed duo runs: %d of %d in a row passed", passed, runs)
}
