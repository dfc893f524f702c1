package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// TestChainAtDocumentedErrorRates runs `s3zip create --strategy chain`
// over 200 objects of the challenge's sizes (s3zip sample) through a proxy
// that answers every 7th UploadPartCopy or CompleteMultipartUpload 200 OK
// with InternalError in the body and every 50th request 500: each run must
// end in an archive that `s3zip verify` finds sound, nothing left behind.
// S3ZIP_REPEAT runs it that many times in a row, each with faults of its
// own seed. A gigabyte per run: make test-long.
//
//	S3ZIP_LONG=1 S3ZIP_REPEAT=10 go test -count=1 -run TestChainAtDocumentedErrorRates -v -timeout 60m ./cmd/s3zip/
func TestChainAtDocumentedErrorRates(t *testing.T) {
	if os.Getenv("S3ZIP_LONG") != "1" {
		t.Skip("a gigabyte per run: run with S3ZIP_LONG=1 (make test-long)")
	}
	repeat := 1
	if s := os.Getenv("S3ZIP_REPEAT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("S3ZIP_REPEAT=%q: want a positive number", s)
		}
		repeat = n
	}
	srv := cliServer(t)
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"sample", "--dest", "s3://src/c/", "--count", "200", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatalf("sample: %v\n%s", err, out.String())
	}
	for i := 1; i <= repeat; i++ {
		p, err := fp.Start(fp.Config{Target: srv.Endpoint(), Seed: uint64(i), SourceSize: srv.ObjectSize, Rules: []fp.Rule{
			{Ops: []fp.Op{fp.UploadPartCopy, fp.CompleteMultipartUpload}, Faults: []fp.Fault{fp.ErrorIn200}, Rate: 1.0 / 7},
			{Faults: []fp.Fault{fp.InternalError}, Rate: 1.0 / 50},
		}})
		if err != nil {
			t.Fatal(err)
		}
		dest := fmt.Sprintf("s3://dst/chain-%02d.zip", i)
		out.Reset()
		start := time.Now()
		err = run(ctx, []string{"create", "--strategy", "chain", "--source", "s3://src/c/", "--dest", dest, "--work-bucket", "work", "--endpoint", p.URL()}, &out)
		took := time.Since(start)
		summary := p.Summary()
		p.Close()
		if err != nil {
			t.Fatalf("run %d of %d failed after %v (%s): %v\n%s", i, repeat, took.Round(time.Second), summary, err, out.String())
		}
		var vout bytes.Buffer
		if err := run(ctx, []string{"verify", dest, "--endpoint", srv.Endpoint()}, &vout); err != nil {
			t.Fatalf("run %d: verify %s: %v\n%s", i, dest, err, vout.String())
		}
		if left := srv.Leftovers(t, "work", "dst"); len(left) > 0 {
			t.Fatalf("run %d left behind: %s", i, strings.Join(left, ", "))
		}
		t.Logf("run %d of %d: archive sound (s3zip verify) in %v; %s", i, repeat, took.Round(time.Second), summary)
		key := strings.TrimPrefix(dest, "s3://dst/")
		for _, k := range []string{key, key + ".report.json"} {
			_, _ = srv.Client(t).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("dst"), Key: aws.String(k)})
		}
	}
}
