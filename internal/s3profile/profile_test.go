package s3profile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// Measuring versitygw finds what sets it apart from AWS's S3 — it reads
// every part again at CompleteMultipartUpload — and leaves nothing behind.
func TestMeasureAServer(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "work")
	m, err := Measure(t.Context(), srv.Client(t), "work", "s3zip-work/")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Check(); err != nil {
		t.Errorf("measured %+v: %v", m, err)
	}
	if m.CompletePerByte <= 0 {
		t.Errorf("CompletePerByte %g: versitygw concatenates the parts it completes, so a Complete of %d bytes takes longer than one of 1 KiB", m.CompletePerByte, sampleSize)
	}
	if left := srv.Leftovers(t, "work"); len(left) > 0 {
		t.Errorf("measuring left %s", strings.Join(left, ", "))
	}
	model := m.Model(8)
	if model.CompletePerByte != m.CompletePerByte || model.ServerCopyRate != m.CopyRate || model.WorkerBandwidth != m.GetOneRate || model.Concurrency != 8 {
		t.Errorf("model %+v does not carry what was measured %+v", model, m)
	}
	if model.S3ReadRate != 0 || model.PricePutPer1000 != plan.DefaultModel.PricePutPer1000 {
		t.Errorf("model %+v: want no S3 request rates assumed and AWS's prices", model)
	}
}

// failingCopy is a server that refuses UploadPartCopy, midway through a
// measurement.
type failingCopy struct{ *s3.Client }

func (f failingCopy) UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	return nil, errors.New("AccessDenied: copy refused")
}

// A measurement that fails midway says where and why, and still removes
// what it wrote and aborts what it opened.
func TestMeasureFailureLeavesNothing(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "work")
	_, err := Measure(t.Context(), failingCopy{srv.Client(t)}, "work", "s3zip-work/")
	if err == nil || !strings.Contains(err.Error(), "UploadPartCopy") || !strings.Contains(err.Error(), "s3://work/s3zip-work/profile-") {
		t.Fatalf("error %v: want one naming the request refused and where", err)
	}
	if left := srv.Leftovers(t, "work"); len(left) > 0 {
		t.Errorf("a failed measurement left %s", strings.Join(left, ", "))
	}
}

func TestCacheKeepsAProfilePerEndpoint(t *testing.T) {
	c := Cache{Dir: filepath.Join(t.TempDir(), "profiles"), MaxAge: time.Hour}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := Measured{Endpoint: "http://127.0.0.1:7070", At: now, RequestSeconds: 0.001, RequestRate: 900, GetOneRate: 5e8, GetRate: 6e8,
		IngestRate: 3e8, CopyRate: 2e8, CompleteSeconds: 0.01, CompletePerByte: 6e-10}
	if _, ok, err := c.Load(m.Endpoint, now); ok || err != nil {
		t.Fatalf("empty cache: ok %v, error %v", ok, err)
	}
	if err := c.Save(m); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Load(m.Endpoint, now.Add(time.Minute))
	if !ok || err != nil || got != m {
		t.Errorf("loaded %+v (ok %v, error %v), want %+v", got, ok, err, m)
	}
	if _, ok, _ := c.Load("http://127.0.0.1:7071", now); ok {
		t.Error("another endpoint's profile was loaded")
	}
	if _, ok, _ := c.Load(m.Endpoint, now.Add(2*time.Hour)); ok {
		t.Error("a profile older than MaxAge was loaded; it must be measured again")
	}
	bad := m
	bad.CopyRate = 0
	bad.Endpoint = "http://bad"
	if err := c.Save(bad); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Load(bad.Endpoint, now); ok {
		t.Error("a profile with a zero copy rate was loaded")
	}
	// Saving prunes what was kept past MaxAge (a local server on a new
	// port each run leaves a profile a run).
	stale := c.Path("http://127.0.0.1:9")
	if err := os.WriteFile(stale, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, long, long); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(m); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a profile kept past MaxAge is still there after a save: %v", err)
	}
	if _, ok, _ := c.Load(m.Endpoint, now.Add(time.Minute)); !ok {
		t.Error("the profile just saved was pruned")
	}
}
