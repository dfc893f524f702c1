package faults_test

// The answers S3 documents besides throttling: 200 OK with an error in the
// body from UploadPartCopy, CopyObject and CompleteMultipartUpload (the
// operation did not happen), bursts of 500 InternalError and of 503
// ServiceUnavailable, and a connection reset half-way through an answer's
// body (the effect happened, the answer is cut); 409
// ConditionalRequestConflict from a conditional completion (start the
// upload again) and from a conditional PUT (send it again). Each is crossed with
// every layout and with extract, through the workflow's client as the CLI
// and the Lambdas build it (internal/s3rate: its attempts and budget, a
// shorter backoff): every run must end in the archive, or the objects,
// every byte right, nothing left behind.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/stepfn"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// documentedRows are the fault table's rows of S3's documented answers.
var documentedRows = []struct {
	name  string
	rules []fp.Rule
}{
	// The first completion (in stream, the archive's only one) and then
	// one copy or completion in seven.
	{"200-error/copy-complete", []fp.Rule{
		{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.ErrorIn200}, Rate: 1, Limit: 1},
		{Ops: []fp.Op{fp.UploadPartCopy, fp.CopyObject, fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.ErrorIn200}, Rate: 1.0 / 7},
	}},
	{"500-bursts", []fp.Rule{
		{Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: 10, Limit: 8},
		{Faults: []fp.Fault{fp.InternalError}, Rate: 1, After: 60, Limit: 8},
	}},
	{"503-unavailable-bursts", []fp.Rule{
		{Faults: []fp.Fault{fp.ServiceUnavailable}, Rate: 1, After: 10, Limit: 8},
		{Faults: []fp.Fault{fp.ServiceUnavailable}, Rate: 1, After: 60, Limit: 8},
	}},
	{"reset-mid-body", []fp.Rule{{Ops: []fp.Op{fp.GetObject, fp.UploadPartCopy, fp.CompleteMultipartUpload, fp.ListObjectsV2}, Faults: []fp.Fault{fp.ResetMidBody}, Rate: 0.2}}},
	// The first completions happen and their answers are cut: each retry
	// finds no upload (NoSuchUpload, the proxy's CompletedGone), and the
	// object it made.
	{"reset-mid-body/complete", []fp.Rule{{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.ResetMidBody}, Rate: 1, Limit: 3}}},
	// The first two conditional completions (the archive's, an entry's)
	// meet 409 ConditionalRequestConflict, and their uploads are gone: S3
	// says to start the upload again and upload every part anew.
	{"409-conflict/complete", []fp.Rule{{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.ConditionalConflict}, Rate: 1, Limit: 2}}},
	// Conditional PUTs (the report, extract's objects and its report) meet
	// 409 ConditionalRequestConflict, which wrote nothing: S3 says a
	// PutObject may be sent again.
	{"409-conflict/put", []fp.Rule{{Ops: []fp.Op{fp.PutObject}, Faults: []fp.Fault{fp.ConditionalConflict}, Rate: 1, Limit: 4}}},
}

// documentedLayouts are the layouts each row is crossed with: all four
// with S3ZIP_LONG=1, chain and auto otherwise (chain makes the most
// copies and completions; auto is what users run).
func documentedLayouts() []string {
	if os.Getenv("S3ZIP_LONG") == "1" {
		return []string{"stream", "duo", "chain", "auto"}
	}
	return []string{"chain", "auto"}
}

// documentedClient is the workflow's S3 client through p, configured as
// production configures it (s3rate.Options) but for a shorter backoff.
func (w *world) documentedClient(t *testing.T, p *fp.Proxy) *s3.Client {
	return w.srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		s3rate.Options(s3rate.Config{Limits: &s3rate.Limits{}, MaxBackoff: 200 * time.Millisecond,
			Timeouts: s3rate.Timeouts{Connect: 2 * time.Second, Header: 5 * time.Second, IdleBody: 2 * time.Second}})(o)
	})
}

// TestDocumentedErrors runs every layout through each row: an archive,
// right, every time.
func TestDocumentedErrors(t *testing.T) {
	w := newWorld(t)
	w.putSources(t, "d/", 1)
	for i, row := range documentedRows {
		for _, layout := range documentedLayouts() {
			t.Run(row.name+"/"+layout, func(t *testing.T) {
				started := time.Now()
				p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: uint64(500 + i), Rules: row.rules, Hold: 10 * time.Second, SourceSize: w.srv.ObjectSize, CompletedGone: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				dest := "out/" + strings.ReplaceAll(t.Name(), "/", "-") + ".zip"
				_, err = w.runner(w.documentedClient(t, p)).Run(context.Background(), request(layout, "d/", dest, false), fmt.Sprintf("documented-%d-%s", i, layout))
				p.SetRules(nil)
				if n, _ := p.Injected(); n == 0 {
					t.Errorf("the row injected no fault: it proves nothing")
				}
				w.judge(t, started, p, wantArchive, outcome{err: err, dest: dest, want: w.wants("d/")})
			})
		}
	}
}

// TestExtractDocumentedErrors extracts through each row: every object,
// byte for byte.
func TestExtractDocumentedErrors(t *testing.T) {
	w := newExtractWorld(t)
	for i, row := range documentedRows {
		t.Run(row.name, func(t *testing.T) {
			started := time.Now()
			p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: uint64(600 + i), Rules: row.rules, Hold: 10 * time.Second, SourceSize: w.srv.ObjectSize, CompletedGone: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			prefix := "out/documented-" + strings.ReplaceAll(row.name, "/", "-") + "/"
			_, err = extract.Run(context.Background(), w.documentedClient(t, p), extractRequest(prefix), nil)
			p.SetRules(nil)
			if n, _ := p.Injected(); n == 0 {
				t.Errorf("the row injected no fault: it proves nothing")
			}
			w.judgeExtract(t, started, p, "objects", prefix, err)
		})
	}
}

// TestUploadConflictEveryTime: S3 answers every conditional completion 409
// ConditionalRequestConflict. The run starts the upload again three times,
// then fails with UploadRestartError, leaving nothing: not the uploads it
// started, not the work.
func TestUploadConflictEveryTime(t *testing.T) {
	w := newWorld(t)
	w.putSmall(t, "c/", 30)
	started := time.Now()
	p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Seed: 700, Rules: []fp.Rule{{Ops: []fp.Op{fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.ConditionalConflict}, Rate: 1}},
		Hold: 10 * time.Second, SourceSize: w.srv.ObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	dest := "out/conflict-every-time.zip"
	_, err = w.runner(w.documentedClient(t, p)).Run(context.Background(), request("stream", "c/", dest, false), "conflict-every-time")
	if n := p.Counts()[fp.CompleteMultipartUpload].Injected[fp.ConditionalConflict]; n != 4 {
		t.Errorf("%d conflicts met, want 4 (the first completion and three restarts)", n)
	}
	w.judge(t, started, p, wantFailure(stepfn.TypeUploadRestartError), outcome{err: err, dest: dest})
}
