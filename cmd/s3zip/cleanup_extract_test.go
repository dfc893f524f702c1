package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// heldExtract is `s3zip extract` running as a process through a proxy that
// holds every CompleteMultipartUpload for hold (then drops it), caught in
// the middle: a copy's upload open and a read entry written (out/small.txt).
type heldExtract struct {
	*cliRun
	srv     *s3test.Server
	proxy   *fp.Proxy
	archive []byte
}

func startHeldExtract(t *testing.T, hold time.Duration) heldExtract {
	t.Helper()
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
	p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Rules: []fp.Rule{{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.Timeout}, Rate: 1}}, Hold: hold})
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
	return heldExtract{cliRun: r, srv: srv, proxy: p, archive: buf.Bytes()}
}

// TestKilledExtractIsCleanedUp: kill -9 during `s3zip extract` leaves its
// job files, an open multipart upload and objects it wrote; `s3zip cleanup`
// of the archive finds that run, removes all of it and says what it removed.
// A proxy holds every CompleteMultipartUpload, so the run is surely in the
// middle (a copy's upload open, a read entry written) when it is killed.
func TestKilledExtractIsCleanedUp(t *testing.T) {
	h := startHeldExtract(t, 2*time.Minute)
	r, srv, buf := h.cliRun, h.srv, bytes.NewBuffer(h.archive)
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
	for _, k := range srv.Keys(t, "dst", "out/") {
		t.Errorf("extracted object left after cleanup: %s", k)
	}
	if b := srv.GetObject(t, "src", "a.zip"); !bytes.Equal(b, buf.Bytes()) {
		t.Error(fmt.Errorf("the archive changed"))
	}
}

// An interrupted extract undoes what it wrote (the Abort runs, as a failure's
// does), says it stopped, not failed, and says what it left: nothing. The
// Complete it waits on is dropped after a second, as a stalled one would be.
func TestExtractInterrupted(t *testing.T) {
	h := startHeldExtract(t, time.Second)
	h.cmd.Process.Signal(syscall.SIGINT)
	code := h.wait(t, 60*time.Second)
	stderr := h.stderr.String()
	if code != 130 || !strings.Contains(stderr, "s3zip: interrupted; nothing it wrote under s3://dst/out/ is left, work removed") || strings.Contains(stderr, "failed") {
		t.Errorf("exit %d, want 130, saying it stopped and left nothing; stderr:\n%s", code, stderr)
	}
	for _, l := range h.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
	if keys := h.srv.Keys(t, "dst", "out/"); len(keys) > 0 {
		t.Errorf("extracted objects left: %q", keys)
	}
}

// A second Ctrl-C stops an extract at once, its clean-up held, and prints
// the clean-up that finishes it; run as printed, it removes everything.
func TestExtractInterruptedTwice(t *testing.T) {
	h := startHeldExtract(t, 2*time.Minute)
	h.proxy.SetRules([]fp.Rule{{Faults: []fp.Fault{fp.Timeout}, Rate: 1}}) // the clean-up hangs
	h.cmd.Process.Signal(syscall.SIGINT)
	h.waitStderr(t, "interrupt again to stop at once")
	h.cmd.Process.Signal(syscall.SIGINT)
	code := h.wait(t, 10*time.Second)
	const said = "interrupted again; stopped before the clean-up finished; remove what is left with: "
	stderr := h.stderr.String()
	_, advice, ok := strings.Cut(stderr, said)
	if code != 130 || !ok {
		t.Fatalf("exit %d, want 130 and how to finish the clean-up; stderr:\n%s", code, stderr)
	}
	h.proxy.SetRules(nil)
	advice, _, _ = strings.Cut(advice, "\n")
	words := shellWords(t, advice)
	if want := []string{"s3zip", "cleanup", "s3://src/a.zip", "--work-bucket", "work", "--endpoint", h.proxy.URL()}; !slices.Equal(words, want) {
		t.Errorf("advised %s\nwant %s", advice, shellCommand(want...))
	}
	var out bytes.Buffer
	if err := run(t.Context(), words[1:], &out); err != nil {
		t.Fatalf("cleanup as advised (%s): %v\n%s", advice, err, out.String())
	}
	for _, l := range h.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind after cleanup: %s", l)
	}
	if keys := h.srv.Keys(t, "dst", "out/"); len(keys) > 0 {
		t.Errorf("extracted objects left after cleanup: %q", keys)
	}
}
