package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		method, target string
		copy           bool
		want           Op
	}{
		{"GET", "/", false, ListBuckets},
		{"GET", "/bkt?list-type=2&prefix=p%2F", false, ListObjectsV2},
		{"GET", "/bkt", false, ListObjects},
		{"GET", "/bkt?uploads", false, ListMultipartUploads},
		{"POST", "/bkt?delete", false, DeleteObjects},
		{"PUT", "/bkt", false, CreateBucket},
		{"HEAD", "/bkt", false, HeadBucket},
		{"GET", "/bkt/k/x.txt", false, GetObject},
		{"GET", "/bkt/k?attributes", false, GetObjectAttributes},
		{"GET", "/bkt/k?uploadId=u", false, ListParts},
		{"HEAD", "/bkt/k", false, HeadObject},
		{"PUT", "/bkt/k", false, PutObject},
		{"PUT", "/bkt/k", true, CopyObject},
		{"PUT", "/bkt/k?partNumber=2&uploadId=u", false, UploadPart},
		{"PUT", "/bkt/k?partNumber=2&uploadId=u", true, UploadPartCopy},
		{"POST", "/bkt/k?uploads", false, CreateMultipartUpload},
		{"POST", "/bkt/k?uploadId=u", false, CompleteMultipartUpload},
		{"DELETE", "/bkt/k?uploadId=u", false, AbortMultipartUpload},
		{"DELETE", "/bkt/k", false, DeleteObject},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.copy {
			r.Header.Set("X-Amz-Copy-Source", "src/key")
		}
		if got := Classify(r); got != c.want {
			t.Errorf("%s %s (copy %v) = %s, want %s", c.method, c.target, c.copy, got, c.want)
		}
	}
}

// TestDecisionsAreDeterministic: the same requests get the same faults,
// whatever their order.
func TestDecisionsAreDeterministic(t *testing.T) {
	decide := func(seed uint64, order []int) map[int]Fault {
		p := &Proxy{cfg: Config{Seed: seed}, seen: map[string]int{}, counts: map[Op]*OpCount{}}
		p.setRules([]Rule{{Faults: AllFaults, Rate: 0.3}})
		out := map[int]Fault{}
		for _, i := range order {
			r := httptest.NewRequest("PUT", "/b/k?partNumber="+string(rune('0'+i%10))+"&uploadId=x", nil)
			r.Header.Set("Range", string(rune('a'+i/10)))
			out[i] = p.decide(Classify(r), r)
		}
		return out
	}
	var fwd, rev []int
	for i := 0; i < 100; i++ {
		fwd = append(fwd, i)
		rev = append([]int{i}, rev...)
	}
	a, b, c := decide(1, fwd), decide(1, rev), decide(2, fwd)
	faults, differ := 0, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %q forwards, %q backwards", i, a[i], b[i])
		}
		if a[i] != "" {
			faults++
		}
		if a[i] != c[i] {
			differ++
		}
	}
	if faults < 15 || faults > 45 || differ == 0 {
		t.Errorf("rate 0.3 over 100 requests injected %d faults; seeds 1 and 2 differ on %d", faults, differ)
	}
}

// TestAgainstVersitygw: signatures verify through the proxy, and each fault
// reaches the client as S3 would deliver it.
func TestAgainstVersitygw(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	p, err := Start(Config{Target: srv.Endpoint(), Hold: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := s3.New(srv.Options(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RetryMaxAttempts = 1
		o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(time.Second)
	})
	ctx := context.Background()
	put := func() error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader([]byte("hello"))})
		return err
	}
	if err := put(); err != nil {
		t.Fatalf("through the proxy without faults: %v", err)
	}
	for _, c := range []struct {
		fault Fault
		check func(error) bool
	}{
		{InternalError, func(err error) bool {
			var ae smithy.APIError
			return errors.As(err, &ae) && ae.ErrorCode() == "InternalError"
		}},
		{SlowDown, func(err error) bool {
			var ae smithy.APIError
			return errors.As(err, &ae) && ae.ErrorCode() == "SlowDown"
		}},
		{Timeout, func(err error) bool { return err != nil }},
		{Reset, func(err error) bool { return err != nil }},
		{ResetAfter, func(err error) bool { return err != nil }},
	} {
		p.SetRules([]Rule{{Ops: []Op{PutObject}, Faults: []Fault{c.fault}, Rate: 1}})
		start := time.Now()
		err := put()
		if !c.check(err) {
			t.Errorf("%s: err = %v", c.fault, err)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("%s: took %v; a held request must end when the client gives up", c.fault, time.Since(start))
		}
	}
	p.SetRules(nil)
	// ResetAfter let the server act: the object is there.
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "hello" {
		t.Errorf("object = %q", b)
	}
	if n, _ := p.Injected(); n != 5 {
		t.Errorf("injected %d faults, want 5: %s", n, p.Summary())
	}
	_ = http.StatusOK
}

// TestLatency: with Config.Latency, no request is answered sooner than
// that after it arrived, and requests in flight together wait together
// (a server-side delay, not a queue).
func TestLatency(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer backend.Close()
	const latency = 100 * time.Millisecond
	p, err := Start(Config{Target: backend.URL, Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	began := time.Now()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			resp, err := http.Get(p.URL() + "/b/k")
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(began); took < latency || took > 4*latency {
		t.Fatalf("8 requests at once through a proxy of %v latency took %v: want one latency, not less, not one each", latency, took)
	}
}

// TestDocumentedAnswers: the answers S3 documents besides throttling reach
// the client as S3 sends them: a 200 OK whose body is an error (the copy
// not made), 503 ServiceUnavailable, and a body cut by a reset after the
// server acted; a rule with After fires in a burst.
func TestDocumentedAnswers(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	big := s3test.Bytes(1, 100_000)
	srv.PutObject(t, "bkt", "src", big)
	p, err := Start(Config{Target: srv.Endpoint(), Hold: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := s3.New(srv.Options(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RetryMaxAttempts = 1
	})
	ctx := context.Background()
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return ""
	}

	p.SetRules([]Rule{{Ops: []Op{CopyObject}, Faults: []Fault{ErrorIn200}, Rate: 1}})
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("copy"), CopySource: aws.String("bkt/src")})
	if code(err) != "InternalError" {
		t.Errorf("200 with an error body: err = %v, want InternalError", err)
	}
	if _, err := srv.Client(t).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("copy")}); err == nil {
		t.Error("200 with an error body: the copy was made; S3 says it was not")
	}

	p.SetRules([]Rule{{Ops: []Op{HeadObject, GetObject}, Faults: []Fault{ServiceUnavailable}, Rate: 1}})
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("src")})
	if code(err) != "ServiceUnavailable" {
		t.Errorf("503 ServiceUnavailable: err = %v", err)
	}

	p.SetRules([]Rule{{Ops: []Op{GetObject}, Faults: []Fault{ResetMidBody}, Rate: 1}})
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("src")})
	if err != nil {
		t.Fatalf("reset mid-body: the headers did not arrive: %v", err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err == nil || len(got) == 0 || len(got) > StallAfter || !bytes.Equal(got, big[:len(got)]) {
		t.Errorf("reset mid-body: read %d bytes, err %v; want the first bytes, at most %d, then an error", len(got), err, StallAfter)
	}

	p.SetRules([]Rule{{Ops: []Op{HeadObject}, Faults: []Fault{InternalError}, Rate: 1, After: 2, Limit: 3}})
	var pattern []byte
	for range 7 {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("src")})
		pattern = append(pattern, map[bool]byte{true: 'x', false: '.'}[err != nil])
	}
	if string(pattern) != "..xxx.." {
		t.Errorf("a burst of 3 after 2: %s, want ..xxx..", pattern)
	}
}

// A conditional completion meets 409 ConditionalRequestConflict and its
// upload is gone for all but its abort; an unconditional one is not
// touched.
func TestConditionalConflict(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	p, err := Start(Config{Target: srv.Endpoint(), Rules: []Rule{{Faults: []Fault{ConditionalConflict}, Rate: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := s3.New(srv.Options(), func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RetryMaxAttempts = 1
	})
	ctx := context.Background()
	upload := func(key string) (*string, []types.CompletedPart) {
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String(key), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("abc"))})
		if err != nil {
			t.Fatal(err)
		}
		return up.UploadId, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}
	}
	id, parts := upload("a")
	complete := &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("a"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, IfNoneMatch: aws.String("*")}
	_, err = c.CompleteMultipartUpload(ctx, complete)
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusConflict || !strings.Contains(err.Error(), "ConditionalRequestConflict") {
		t.Fatalf("conditional completion: %v, want 409 ConditionalRequestConflict", err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, complete); err == nil || !strings.Contains(err.Error(), "NoSuchUpload") {
		t.Errorf("the completion again: %v, want NoSuchUpload (S3 says to start the upload again)", err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("a"), UploadId: id}); err != nil {
		t.Errorf("its abort: %v, want it forwarded", err)
	}
	ups, err := srv.Client(t).ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("uploads left on the server: %v, %v", ups, err)
	}
	id, parts = upload("b")
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("b"), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Errorf("an unconditional completion: %v, want it forwarded", err)
	}
	// A conditional PutObject is answered 409 and writes nothing; sent
	// again (the rule's limit reached), it is forwarded.
	p.SetRules([]Rule{{Faults: []Fault{ConditionalConflict}, Rate: 1, Limit: 1}})
	put := func() error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("p"), Body: bytes.NewReader([]byte("xyz")), IfNoneMatch: aws.String("*")})
		return err
	}
	if err := put(); !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusConflict || !strings.Contains(err.Error(), "ConditionalRequestConflict") {
		t.Fatalf("conditional put: %v, want 409 ConditionalRequestConflict", err)
	}
	if _, err := srv.Client(t).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("p")}); err == nil {
		t.Errorf("the put answered 409 wrote its object")
	}
	if err := put(); err != nil {
		t.Errorf("the put again: %v, want it forwarded", err)
	}
	if n, _ := p.Injected(); n != 2 {
		t.Errorf("%d faults injected, want 2: %s", n, p.Summary())
	}
}
