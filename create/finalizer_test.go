package create

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/plan"
)

// partRecorder records the size of every part sent with UploadPart.
type partRecorder struct {
	S3
	mu    sync.Mutex
	sizes map[int32]int64
}

func (r *partRecorder) UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	r.mu.Lock()
	r.sizes[aws.ToInt32(in.PartNumber)] = aws.ToInt64(in.ContentLength)
	r.mu.Unlock()
	return r.S3.UploadPart(ctx, in, optFns...)
}

// TestRunWritesDirectoryInParts: 18,000 objects with long keys make a
// central directory of about 12 MiB; with 5 MiB directory parts the
// finalizer sends it as the last three parts, two of exactly 5 MiB, and
// every ZIP reader reads the archive S3 completed with its whole CRC-32.
func TestRunWritesDirectoryInParts(t *testing.T) {
	const n = 18_000
	e := newEnv(t, nil)
	// Long keys, in path segments a file system takes (versitygw stores
	// keys as paths).
	seg := strings.Repeat("d", 200)
	keyOf := func(i int) string { return fmt.Sprintf("in/%03d-%s/%s/%s/%06d.txt", i%100, seg, seg, seg, i) }
	objects := make(map[string][]byte, n)
	rest := make(map[string][]byte, n)
	dirSize := int64(0)
	for i := range n {
		key := keyOf(i)
		objects[key] = []byte(fmt.Sprintf("object %d\n", i))
		dirSize += 46 + int64(len(key)-len("in/"))
		if i >= 100 {
			rest[key] = objects[key]
		}
	}
	t0 := time.Now()
	// One object per folder first: versitygw refuses concurrent puts that
	// create the same folder.
	for i := range 100 {
		e.srv.PutObject(t, "src", keyOf(i), objects[keyOf(i)])
	}
	e.srv.PutObjects(t, "src", rest)
	t.Logf("uploaded %d objects in %s", n, time.Since(t0).Round(time.Millisecond))
	e.want = objects
	rec := &partRecorder{S3: e.s3, sizes: map[int32]int64{}}
	r := &Runner{S3: rec, Config: Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 8, DirectoryPartSize: s3part.MinPartSize}}
	t0 = time.Now()
	res, err := r.Run(context.Background(), request("stream", "in/", "out/a.zip", ""), "exec-dirparts")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run: %s, %d parts, archive %d bytes", time.Since(t0).Round(time.Millisecond), res.Output.Stats.Parts, res.Output.Archive.Size)
	finals := int(s3part.MinPartSize-1+dirSize) / s3part.MinPartSize
	if finals < 2 {
		t.Fatalf("directory of %d bytes fits one 5 MiB part: make the keys longer", dirSize)
	}
	last := int32(res.Output.Stats.Parts)
	for k := range finals {
		num := last - int32(k)
		size, sent := rec.sizes[num]
		switch {
		case !sent:
			t.Errorf("part %d (of %d) was not sent with UploadPart; the directory's %d bytes should be the last %d parts", num, last, dirSize, finals)
		case k > 0 && size != s3part.MinPartSize:
			t.Errorf("part %d (of %d) is %d bytes; the directory's parts but the last should be %d", num, last, size, s3part.MinPartSize)
		}
	}
	e.checkArchive(t, "out/a.zip", "in/")
	e.assertClean(t)
}

// TestMergeRefusesResultForDirectoryPart: the directory's parts are the
// finalizer's; a worker result naming one is not taken.
func TestMergeRefusesResultForDirectoryPart(t *testing.T) {
	entries := make([]plan.Entry, 12_000)
	for i := range entries {
		name := fmt.Sprintf("%06d-%s", i, strings.Repeat("n", 900))
		entries[i] = plan.Entry{Name: name, Source: plan.Source{Bucket: "src", Key: name}, Size: 1}
	}
	p, err := plan.Make(entries, plan.Options{Strategy: plan.StrategyStream, DirectoryPartSize: s3part.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.FinalParts()) < 2 {
		t.Fatalf("%d final parts, want 2 or more", len(p.FinalParts()))
	}
	directoryPart := p.FinalParts()[1].Number
	_, _, err = mergeResults(p.WorkerParts(), p.Stats(), []PartResult{{Part: directoryPart, ETag: `"x"`}})
	if err == nil || !strings.Contains(err.Error(), "worker parts are 1 to") {
		t.Fatalf("a worker result for directory part %d: %v, want it refused", directoryPart, err)
	}
}
