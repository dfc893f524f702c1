package workflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// putWatcher notes, for each object put, the file its body is read from
// (none: a buffer in memory).
type putWatcher struct {
	*s3.Client
	mu    sync.Mutex
	files map[string]string // key → the body's file
}

func (c *putWatcher) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	c.mu.Lock()
	if f, ok := in.Body.(*os.File); ok {
		c.files[aws.ToString(in.Key)] = f.Name()
	}
	c.mu.Unlock()
	return c.Client.PutObject(ctx, in, opts...)
}

// The planner writes the entries and part-job files to $TMPDIR (the
// Lambda's /tmp, sized by infra) as the plan is encoded and puts them from
// there: held in memory they were most of its memory at ten million
// entries. It leaves nothing behind there; a $TMPDIR it cannot write is an
// error that says where the files go.
func TestPlannerSpoolsPlanFiles(t *testing.T) {
	e := newEnv(t, []object{{"in/a.txt", 1000, s3test.ChecksumCRC32}, {"in/b.txt", 2000, s3test.ChecksumCRC32}})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	c := &putWatcher{Client: e.s3, files: map[string]string{}}
	pl := &Planner{S3: c, Config: Config{WorkBucket: "work"}}
	job, err := pl.Plan(context.Background(), PlanInput{Request: request("stream", "in/", "out/a.zip", ""), Execution: "exec-spool"})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{job.EntriesKey, job.PartsKey} {
		if f := c.files[key]; filepath.Dir(f) != tmp {
			t.Errorf("%s was put from %q, want a file in $TMPDIR %s", key, f, tmp)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the planner left %d files in $TMPDIR, first %s", len(left), left[0].Name())
	}
	entries := e.srv.GetObject(t, "work", job.EntriesKey)
	if n := strings.Count(string(entries), "\n"); n != 2 {
		t.Errorf("entries file has %d lines, want 2:\n%s", n, entries)
	}

	t.Setenv("TMPDIR", filepath.Join(tmp, "missing"))
	_, err = pl.Plan(context.Background(), PlanInput{Request: request("stream", "in/", "out/b.zip", ""), Execution: "exec-no-tmp"})
	if err == nil || !strings.Contains(err.Error(), "$TMPDIR") {
		t.Errorf("planning with $TMPDIR missing: %v, want an error naming $TMPDIR", err)
	}
}
