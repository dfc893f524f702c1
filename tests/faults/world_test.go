package faults_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

const mib = 1 << 20

// clientTimeout is how long the workflow's S3 client waits for a response;
// a Timeout fault holds a request past it.
const clientTimeout = 1500 * time.Millisecond

// row is one line of the table `make test-faults` prints.
type row struct {
	scenario, expected, observed string
	pass                         bool
	took                         time.Duration
}

var table struct {
	sync.Mutex
	rows []row
}

func TestMain(m *testing.M) {
	if os.Getenv("S3ZIP_FAULTS") != "1" {
		fmt.Println("fault scenarios skipped: run them with S3ZIP_FAULTS=1 (make test-faults)")
		os.Exit(0)
	}
	code := m.Run()
	printTable()
	os.Exit(code)
}

func printTable() {
	table.Lock()
	defer table.Unlock()
	w := [3]int{len("scenario"), len("expected"), len("observed")}
	for _, r := range table.rows {
		w[0], w[1], w[2] = max(w[0], len(r.scenario)), max(w[1], len(r.expected)), max(w[2], len([]rune(r.observed)))
	}
	w[2] = min(w[2], 110)
	line := func(a, b, c, d, e string) {
		fmt.Printf("| %-*s | %-*s | %-*s | %-4s | %5s |\n", w[0], a, w[1], b, w[2], c, d, e)
	}
	fmt.Println()
	line("scenario", "expected", "observed", "pass", "secs")
	fmt.Printf("|%s|%s|%s|------|-------|\n", strings.Repeat("-", w[0]+2), strings.Repeat("-", w[1]+2), strings.Repeat("-", w[2]+2))
	failed := 0
	for _, r := range table.rows {
		obs := []rune(r.observed)
		if len(obs) > w[2] {
			obs = append(obs[:w[2]-1], '…')
		}
		mark := "PASS"
		if !r.pass {
			mark, failed = "FAIL", failed+1
		}
		line(r.scenario, r.expected, string(obs), mark, fmt.Sprintf("%.1f", r.took.Seconds()))
	}
	fmt.Printf("\n%d scenarios, %d passed, %d failed\n", len(table.rows), len(table.rows)-failed, failed)
}

// world is a versitygw shared by a test's scenarios, which run one after
// another with their own destination keys and execution names. Setup and
// checks go straight to the server; the workflow goes through a fault proxy
// of its own per scenario.
type world struct {
	srv    *s3test.Server
	direct *s3.Client
	src    map[string][]byte // key → bytes of objects in bucket "src"
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := s3test.Start(t)
	w := &world{srv: srv, src: map[string][]byte{}}
	w.direct = srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	return w
}

// faults starts a proxy with rules in front of the server and returns it
// with a client that goes through it: the workflow's client, with a
// response timeout and the SDK's standard retries.
func (w *world) faults(t *testing.T, seed uint64, rules ...faultproxy.Rule) (*faultproxy.Proxy, *s3.Client) {
	t.Helper()
	// SourceSize: the proxy also refuses what S3 refuses and versitygw does not.
	p, err := faultproxy.Start(faultproxy.Config{Target: w.srv.Endpoint(), Seed: seed, Rules: rules, Hold: 10 * time.Second, SourceSize: w.srv.ObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c := w.srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(clientTimeout)
		// The SDK's standard retryer (3 attempts, retry quota) with a shorter
		// longest back-off, so heavy scenarios finish in seconds.
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 500 * time.Millisecond })
	})
	return p, c
}

func body(seed uint64, size int) []byte { return s3test.Bytes(seed, size) }

// putSources writes a data set under prefix: small objects the workers
// stream, and objects over 5 MiB the duo strategy copies, with and without a
// stored CRC-32.
func (w *world) putSources(t *testing.T, prefix string, seed uint64) {
	t.Helper()
	put := func(key string, b []byte, opts ...s3test.PutOption) {
		w.srv.PutObject(t, "src", prefix+key, b, opts...)
		w.src[prefix+key] = b
	}
	for i := 0; i < 8; i++ {
		put(fmt.Sprintf("small/%02d.txt", i), body(seed+uint64(i), 100+i*25_000))
	}
	put("big/a.bin", body(seed+100, 5*mib+4321), s3test.WithChecksum(s3test.ChecksumCRC32))
	put("big/b.bin", body(seed+101, 6*mib))
	put("big/c.bin", body(seed+102, 5*mib+99), s3test.WithChecksum(s3test.ChecksumCRC32))
}

func (w *world) wants(prefix string) []zipcheck.Want {
	var out []zipcheck.Want
	for k, b := range w.src {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, zipcheck.WantBytes(name, b))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func request(strategy, prefix, dest string, overwrite bool) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{
		"source":      map[string]any{"bucket": "src", "prefix": prefix},
		"destination": map[string]any{"bucket": "dst", "key": dest},
		"options":     map[string]any{"strategy": strategy, "overwrite": overwrite},
	})
	return raw
}

var quiet = slogDiscard()

func (w *world) runner(c create.S3) *create.Runner {
	return &create.Runner{S3: c, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 2}, Log: quiet}
}

func config() create.Config {
	return create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4}
}

// verified remembers archives every reader has checked, by the SHA-256 of
// their bytes and of what they must hold: scenarios that end with the same
// bytes need not start seven readers again.
var verified sync.Map

// verify reads the archive with every reader; nil when all agree with want.
// It says whether the readers ran or the same bytes were checked before.
func (w *world) verify(t *testing.T, key string, want []zipcheck.Want) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive.zip")
	w.srv.DownloadFile(t, "dst", key, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write(b)
	for _, x := range want {
		fmt.Fprintf(h, "%s %d %x\n", x.Name, x.Size, x.SHA256)
	}
	id := fmt.Sprintf("%x", h.Sum(nil))
	if _, ok := verified.Load(id); ok {
		return fmt.Sprintf("archive ok (bytes identical to one %d readers accepted)", len(zipcheck.Readers())), nil
	}
	if err := zipcheck.Verify(path, want); err != nil {
		return "", err
	}
	verified.Store(id, true)
	return fmt.Sprintf("archive ok (%d readers)", len(zipcheck.Readers())), nil
}

// leftovers lists work objects and multipart uploads that outlived the run.
func (w *world) leftovers(t *testing.T) []string {
	t.Helper()
	return w.srv.Leftovers(t, "work", "dst")
}

// object returns the destination object's bytes, or nil when there is none.
func (w *world) object(t *testing.T, key string) []byte {
	t.Helper()
	out, err := w.direct.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("dst"), Key: &key})
	if err != nil {
		return nil
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Expectations.
const (
	wantArchive = "archive"
	wantEither  = "archive or clean failure"
)

func wantFailure(errType string) string { return "clean " + errType }

// outcome is what a scenario ended with.
type outcome struct {
	err      error
	dest     string
	want     []zipcheck.Want
	previous []byte // the destination's bytes before the run, when it existed
}

// conclude ends a judged row: nothing may be left behind (a BAD
// observation if anything is), the faults injected are summarised, the row
// is recorded (failing the test unless pass) and the world scrubbed.
func (w *world) conclude(t *testing.T, started time.Time, p *faultproxy.Proxy, expected string, obs []string, pass bool) {
	t.Helper()
	if left := w.leftovers(t); len(left) > 0 {
		pass = false
		obs = append(obs, "BAD: left behind: "+strings.Join(left, ", "))
	} else {
		obs = append(obs, "clean")
	}
	if p != nil {
		if n, _ := p.Injected(); n > 0 {
			obs = append(obs, p.Summary())
		}
		if refused := p.StrictRefusals(); len(refused) > 0 {
			pass = false
			obs = append(obs, "BAD: S3 refuses: "+strings.Join(refused, ", "))
		}
	}
	record(t, started, expected, strings.Join(obs, "; "), pass)
	w.scrub(t)
}

// judge checks an outcome against the expectation, records the table row
// and fails the test when they disagree.
func (w *world) judge(t *testing.T, started time.Time, p *faultproxy.Proxy, expected string, o outcome) {
	t.Helper()
	var obs []string
	pass := true
	bad := func(format string, a ...any) {
		pass = false
		obs = append(obs, "BAD: "+fmt.Sprintf(format, a...))
	}
	got := w.object(t, o.dest)
	if o.err == nil {
		if got == nil {
			bad("run succeeded but s3://dst/%s is missing", o.dest)
		} else if msg, err := w.verify(t, o.dest, o.want); err != nil {
			bad("archive rejected: %v", err)
		} else {
			obs = append(obs, msg)
		}
		if expected != wantArchive && expected != wantEither {
			bad("succeeded, want a failure")
		}
	} else {
		typ := create.ErrorType(o.err)
		msg := o.err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		obs = append(obs, typ+": "+msg)
		t.Logf("error: %v", o.err)
		switch {
		case typ == stepfn.TypeUntyped:
			bad("error has no type the state machine can tell apart")
		case expected == wantArchive:
			bad("failed, want an archive")
		case expected != wantEither && expected != wantFailure(typ):
			bad("want %s", expected)
		}
		switch {
		case o.previous == nil && got != nil:
			bad("s3://dst/%s exists after a failed run", o.dest)
		case o.previous != nil && !bytes.Equal(got, o.previous):
			bad("the object that was at s3://dst/%s before the run changed", o.dest)
		}
	}
	w.conclude(t, started, p, expected, obs, pass)
}

// scrub removes what a scenario left, so the next one starts clean.
func (w *world) scrub(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ups, err := w.direct.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("dst")})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		_, _ = w.direct.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("dst"), Key: u.Key, UploadId: u.UploadId})
	}
	for _, b := range []string{"work", "dst"} {
		objs, err := w.direct.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs.Contents {
			_, _ = w.direct.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: o.Key})
		}
	}
}

func record(t *testing.T, started time.Time, expected, observed string, pass bool) {
	t.Helper()
	table.Lock()
	table.rows = append(table.rows, row{scenario: t.Name(), expected: expected, observed: observed, pass: pass, took: time.Since(started)})
	table.Unlock()
	t.Logf("expected %s; observed %s", expected, observed)
	if !pass {
		t.Errorf("scenario failed: expected %s; observed %s", expected, observed)
	}
}
