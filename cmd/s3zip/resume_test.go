package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// resumeSources puts small objects (streamed into upload parts) and big
// ones just over 5 MiB (a copy part each) under src/in/, and returns what
// an archive of them must hold.
func resumeSources(t *testing.T, srv *s3test.Server, small, big int) []zipcheck.Want {
	t.Helper()
	var want []zipcheck.Want
	objects := map[string][]byte{}
	for i := range small {
		objects[fmt.Sprintf("small/%04d.txt", i)] = s3test.Bytes(uint64(i), 2000+i*37%4000)
	}
	for i := range big {
		objects[fmt.Sprintf("big/%02d.bin", i)] = s3test.Bytes(uint64(1000+i), 5<<20+1000+i)
	}
	put := map[string][]byte{}
	for name, b := range objects {
		put["in/"+name] = b
		want = append(want, zipcheck.WantBytes(name, b))
	}
	srv.PutObjects(t, "src", put)
	sort.Slice(want, func(a, b int) bool { return want[a].Name < want[b].Name })
	return want
}

// A run kept after a transient failure (create.Runner with Keep, through
// a proxy whose part requests fail with 500 InternalError from about 80 %
// of the parts on; the CLI's own S3 client would retry each of them for
// minutes first) is left alone by `s3zip cleanup`, and `s3zip resume`
// continues it: it builds only what was not built, the archive is byte for
// byte a clean run's and read right by every reader, and nothing is left.
// --keep itself: TestKeepFlag.
func TestResumeContinuesKeptRun(t *testing.T) {
	srv := cliServer(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	want := resumeSources(t, srv, 300, 16)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"create", "--source", "s3://src/in/", "--work-bucket", "work", "--strategy", "duo", "--workers", "2", "--batch", "1", "--json",
		"--dest", "s3://dst/clean.zip", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("clean create: %v\n%s", err, out.String())
	}
	var clean struct {
		Stats struct{ UploadParts, CopyParts int }
	}
	if err := json.Unmarshal(out.Bytes(), &clean); err != nil {
		t.Fatal(err)
	}
	parts := clean.Stats.UploadParts + clean.Stats.CopyParts

	p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Seed: 5, SourceSize: srv.ObjectSize,
		Rules: []fp.Rule{{Ops: []fp.Op{fp.UploadPart, fp.UploadPartCopy}, Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: parts * 8 / 10}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	through := srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	runner := &create.Runner{S3: through, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 2, PartsPerBatch: 1}, Log: slog.New(slog.DiscardHandler), Keep: time.Hour}
	req, _ := json.Marshal(map[string]any{"source": map[string]string{"bucket": "src", "prefix": "in/"}, "destination": map[string]string{"bucket": "dst", "key": "a.zip"}, "options": map[string]string{"strategy": "duo"}})
	const runName = "local-kept"
	lease := startRun(ctx, srv.Client(t), "work", runName, create.Destination{Bucket: "dst", Key: "a.zip"})
	_, err = runner.Run(ctx, req, runName)
	var kept *stepfn.KeptError
	if !errors.As(err, &kept) {
		t.Fatalf("run through the fault: err = %v, want a kept run", err)
	}
	lease.keepUntil(kept.Until)
	lease.stop(ctx)
	msg := keptRun(kept, "work", srv.Endpoint()).Error()
	if !strings.Contains(msg, "s3zip resume --work-bucket work --endpoint "+srv.Endpoint()+" "+runName) {
		t.Errorf("the kept failure does not print the resume command: %s", msg)
	}

	out.Reset()
	if err := run(ctx, []string{"cleanup", "s3://dst/a.zip", "--work-bucket", "work", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if left := srv.Leftovers(t, "work", "dst"); !strings.Contains(strings.Join(left, ","), "multipart upload of a.zip") {
		t.Fatalf("cleanup removed the kept run (left: %v)\n%s", left, out.String())
	}
	if !strings.Contains(out.String(), "kept for `s3zip resume "+runName+"`") {
		t.Errorf("cleanup does not say the run is kept:\n%s", out.String())
	}

	p.SetRules(nil)
	out.Reset()
	start := time.Now()
	if err := run(ctx, []string{"resume", "--work-bucket", "work", "--endpoint", p.URL(), "--json", runName}, &out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	took := time.Since(start)
	var resumed struct {
		Resume create.ResumeStats
	}
	if err := json.Unmarshal(out.Bytes(), &resumed); err != nil {
		t.Fatal(err)
	}
	r := resumed.Resume
	t.Logf("resumed in %.2f s: %d worker parts, %d built before, %d built now, %d of them twice; %d batches run, %d kept",
		took.Seconds(), r.Parts, r.Listed, r.Built, r.Rebuilt, r.BatchesRun, r.BatchesKept)
	if r.Listed+r.Built-r.Rebuilt != r.Parts || r.Listed < r.Parts/2 || r.Rebuilt > 2*r.MostPerBatch {
		t.Errorf("resume counts %+v: want every part built, most before the fault, at most the 2 batches in flight built twice", r)
	}

	out.Reset()
	if err := run(ctx, []string{"verify", "s3://dst/a.zip", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("verify: %v\n%s", err, out.String())
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.zip"), filepath.Join(dir, "clean.zip")
	srv.DownloadFile(t, "dst", "a.zip", a)
	srv.DownloadFile(t, "dst", "clean.zip", b)
	zipcheck.Check(t, a, want)
	x, _ := os.ReadFile(a)
	y, _ := os.ReadFile(b)
	if !bytes.Equal(x, y) {
		t.Error("the resumed archive differs from the clean run's")
	}
	if left := srv.Leftovers(t, "work", "dst"); len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	out.Reset()
	if err := run(ctx, []string{"resume", "--work-bucket", "work", "--endpoint", srv.Endpoint(), runName}, &out); err == nil || !strings.Contains(err.Error(), "no kept run") {
		t.Errorf("a second resume: err = %v, want one saying there is no kept run", err)
	}
}

// --keep takes Go's durations and whole days up to 30 days, and refuses
// anything else before a request is made.
func TestKeepFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true}, {"90m", 90 * time.Minute, true}, {"24h", 24 * time.Hour, true}, {"7d", 7 * 24 * time.Hour, true},
		{"30d", 30 * 24 * time.Hour, true}, {"31d", 0, false}, {"-1h", 0, false}, {"soon", 0, false}, {"1.5d", 0, false},
	} {
		got, err := parseKeep("create", c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseKeep(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
	r := s3zip(t, nil, "create", "--source", "s3://my-bucket/b/", "--dest", "s3://my-bucket/c.zip", "--keep", "forever")
	if r.code != 2 || !strings.Contains(r.stderr, "--keep") {
		t.Errorf("create --keep forever: exit %d, %q; want 2 and a message naming --keep", r.code, r.stderr)
	}
}

// `s3zip resume` continues a kept extraction too: the objects are the
// archive's entries, and nothing is left behind.
func TestResumeContinuesKeptExtract(t *testing.T) {
	srv := cliServer(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	files := map[string]string{}
	for i := range 120 {
		files[fmt.Sprintf("f/%03d.txt", i)] = strings.Repeat(fmt.Sprintf("entry %d\n", i), 200+i)
	}
	srv.PutObject(t, "src", "a.zip", storedZip(t, files))
	p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Seed: 7, SourceSize: srv.ObjectSize,
		Rules: []fp.Rule{{Ops: []fp.Op{fp.PutObject}, Bucket: "dst", Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: 90}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	through := srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	ctx := context.Background()
	const runName = "local-extract-kept"
	_, err = extract.Run(ctx, through, extract.Request{Bucket: "src", Key: "a.zip", DestBucket: "dst", Prefix: "x/", Workers: 2, WorkBucket: "work",
		Execution: runName, Keep: time.Hour, Options: extract.Options{ReadGroup: 16 << 10}}, nil)
	var kept *stepfn.KeptError
	if !errors.As(err, &kept) {
		t.Fatalf("extract through the fault: err = %v, want a kept run", err)
	}
	p.SetRules(nil)
	var out bytes.Buffer
	if err := run(ctx, []string{"resume", "--work-bucket", "work", "--endpoint", srv.Endpoint(), runName}, &out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	if !strings.Contains(out.String(), "extracted   120 objects") {
		t.Errorf("resume output:\n%s", out.String())
	}
	for name, body := range files {
		if got := string(srv.GetObject(t, "dst", "x/"+name)); got != body {
			t.Errorf("x/%s: %d bytes, want the entry's %d", name, len(got), len(body))
		}
	}
	if left := srv.Leftovers(t, "work", "dst"); len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, ", "))
	}
}
