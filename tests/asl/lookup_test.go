package asl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// objectReads records the requests a client makes of the source bucket's
// objects: what the planner leaves to the read rounds.
type objectReads struct {
	*s3.Client
	mu    sync.Mutex
	calls []string
}

func (c *objectReads) note(op, bucket, key string) {
	if bucket == "src" {
		c.mu.Lock()
		c.calls = append(c.calls, op+" "+key)
		c.mu.Unlock()
	}
}

func (c *objectReads) HeadObject(ctx context.Context, in *s3.HeadObjectInput, o ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	c.note("HeadObject", aws.ToString(in.Bucket), aws.ToString(in.Key))
	return c.Client.HeadObject(ctx, in, o...)
}

func (c *objectReads) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if !strings.HasPrefix(aws.ToString(in.Key), "lists/") { // the manifest is the planner's to read
		c.note("GetObject", aws.ToString(in.Bucket), aws.ToString(in.Key))
	}
	return c.Client.GetObject(ctx, in, o...)
}

func (c *objectReads) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, o ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(aws.ToString(in.CopySource), "/"), "/")
	c.note("UploadPartCopy", bucket, key)
	return c.Client.UploadPartCopy(ctx, in, o...)
}

// (6) A manifest's objects through the real state machine: PlanArchive
// hands their lookups to ReadEntries (a pin round), PlanLayout plans the
// layout and hands the CRC-32s it needs to ReadEntries again (a crc round:
// the objects the pins said store none, learned by probe copies), PlanLayout
// completes the plan and the archive is built. The planner reads no source
// object and makes the same few requests whatever the number of objects
// (tests/workflow's 1,000 against 10,000 count them); every reader reads
// the archive, and nothing is left.
func TestASLManifestObjectsLookedUpByTheReadRounds(t *testing.T) {
	e := newEnv(t)
	const small = 1000
	objects := s3test.NumberedObjects("m/", small, 64)
	keys := make([]string, 0, small)
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	stored := map[string][]byte{}
	for i, k := range keys {
		if i%3 == 0 {
			stored[k] = objects[k]
			delete(objects, k)
		}
	}
	e.srv.PutObjects(t, "src", stored, s3test.WithChecksum(s3test.ChecksumCRC32))
	e.srv.PutObjects(t, "src", objects)
	for k, b := range stored {
		objects[k] = b
	}
	// 3 MiB objects against 5 MiB parts: the headers of some are in one
	// part, their data in two, so the layout needs their CRC-32s first.
	var list strings.Builder
	list.WriteString("key\n")
	for i := range 4 {
		key := fmt.Sprintf("big/%d.bin", i)
		body := s3test.Bytes(uint64(100+i), 3*mib+i)
		checksum := s3test.ChecksumNone
		if i == 1 {
			checksum = s3test.ChecksumCRC32
		}
		e.srv.PutObject(t, "src", key, body, s3test.WithChecksum(checksum))
		objects[key] = body
		fmt.Fprintf(&list, "%s\n", key)
		for _, k := range keys[i*small/4 : (i+1)*small/4] {
			fmt.Fprintf(&list, "%s\n", k)
		}
	}
	e.srv.PutObject(t, "src", "lists/all.csv", []byte(list.String()))
	counter := s3metrics.New()
	planner := &objectReads{Client: s3.New(e.s3.Options(), counter.Option())}
	e.fns.PlannerS3 = planner
	e.fns.Configure(func(c *create.Config) { c.PartsPerBatch = 4 })

	req := `{"source":{"bucket":"src","manifest":{"bucket":"src","key":"lists/all.csv"}},"destination":{"bucket":"dst","key":"out/m.zip"},"options":{"strategy":"stream","partSize":5242880}}`
	out := Execute(t, e.url, json.RawMessage(req), RunOptions{Execution: "exec-manifest", Timeout: 5 * time.Minute})
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, trim(out.Cause, 2000))
	}
	want := []string{"PlanArchive", "HasWorkerParts", "ReadEntries", "PlanLayout", "HasWorkerParts", "ReadEntries", "PlanLayout", "HasWorkerParts", "BuildParts", "FinalizeArchive", "ArchiveCreated"}
	if got := topLevelStates(out); !slices.Equal(got, want) {
		t.Errorf("states entered: %v, want %v (a pin round, then a crc round)", got, want)
	}
	if n := len(e.fns.Calls("planner")); n != 3 {
		t.Errorf("planner invoked %d times, want 3 (PlanArchive, PlanLayout after each round)", n)
	}
	if len(planner.calls) > 0 {
		t.Errorf("the planner read %d source objects, e.g. %q", len(planner.calls), planner.calls[:min(5, len(planner.calls))])
	}
	// The manifest, each round's jobs written and results read back, the
	// plan written twice and read once, the destination checked each time:
	// some dozens, not a thousand.
	if n := counter.Total(); n > 60 {
		t.Errorf("the planner made %d requests for %d objects: %v", n, len(objects), counter.Sorted())
	}
	t.Logf("planner requests: %d %v", counter.Total(), counter.Sorted())
	path := filepath.Join(t.TempDir(), "m.zip")
	e.srv.DownloadFile(t, "dst", "out/m.zip", path)
	zipcheck.Check(t, path, zipcheck.WantObjects(objects, ""))
	e.assertClean(t, "")
}
