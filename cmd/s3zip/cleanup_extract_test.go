package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// TestKilledExtractIsCleanedUp: kill -9 during `s3zip extract` leaves its
// job files, an open multipart upload and objects it wrote; `s3zip cleanup`
// of the archive finds that run, removes all of it and says what it removed.
// A proxy holds every CompleteMultipartUpload, so the run is surely in the
// middle (a copy's upload open, a read entry written) when it is killed.
func TestKilledExtractIsCleanedUp(t *testing.T) {
	bin := cliBinary(t)
	srv := cliServer(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range []struct {
		name   string
		method uint16
		body   []byte
	}{
		{"big1.bin", zip.Store, s3test.Bytes(1, 3<<20)}, // the archive over 5 MiB, so its entries can be copied by range
		{"big2.bin", zip.Store, s3test.Bytes(2, 3<<20+5)},
		{"small.txt", zip.Deflate, bytes.Repeat([]byte("small and deflated\n"), 100)},
	} {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(e.body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	srv.PutObject(t, "src", "a.zip", buf.Bytes())
	p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Rules: []fp.Rule{{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.Timeout}, Rate: 1}}, Hold: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	r := &cliRun{done: make(chan struct{})}
	r.cmd = exec.Command(bin, "extract", "s3://src/a.zip", "s3://dst/out/", "--work-bucket", "work", "--small-stored", "1048576", "--workers", "4", "--endpoint", p.URL())
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done })
	c := srv.Client(t)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the extraction never had an upload open and an object written\n%s", r.stderr.String())
		}
		ups, err1 := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("dst")})
		_, err2 := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/small.txt")})
		if err1 == nil && err2 == nil && len(ups.Uploads) > 0 {
			break
		}
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.wait(t, 10*time.Second)
	left := srv.Leftovers(t, "work", "dst")
	if len(left) == 0 {
		t.Fatal("kill -9 left nothing behind: the test stops the run too late")
	}
	t.Logf("kill -9 left: %s", strings.Join(left, "; "))

	// Looked for in the archive's bucket, the run is not found: cleanup says
	// where else it may be (issue 35, rough edge 9).
	var elsewhere bytes.Buffer
	if err := run(t.Context(), []string{"cleanup", "s3://src/a.zip", "--endpoint", srv.Endpoint()}, &elsewhere); err != nil {
		t.Fatalf("cleanup without --work-bucket: %v\n%s", err, elsewhere.String())
	}
	if !strings.Contains(elsewhere.String(), "no run of s3zip") || !strings.Contains(elsewhere.String(), "--work-bucket BUCKET") {
		t.Errorf("cleanup in the wrong bucket printed %q: want it to say the run may keep its work elsewhere (--work-bucket)", elsewhere.String())
	}

	var out bytes.Buffer
	if err := run(t.Context(), []string{"cleanup", "s3://src/a.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out.String())
	}
	t.Logf("cleanup printed:\n%s", out.String())
	for _, want := range []string{"extract of s3://src/a.zip into s3://dst/out/", "has exited: dead; removed", "1 extracted object", "removed what 1 dead run left"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("cleanup's report does not say %q", want)
		}
	}
	for _, l := range srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind after cleanup: %s", l)
	}
	list, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: aws.String("out/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		t.Errorf("extracted object left after cleanup: %s", aws.ToString(o.Key))
	}
	if b := srv.GetObject(t, "src", "a.zip"); !bytes.Equal(b, buf.Bytes()) {
		t.Error(fmt.Errorf("the archive changed"))
	}
}
