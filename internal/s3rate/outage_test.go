package s3rate

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3err"
)

// failFirst answers its first n requests with answer, the rest with ok.
func failFirst(n int64, answer, ok http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if calls.Add(1) <= n {
			answer(w, r)
			return
		}
		ok(w, r)
	}))
	return ts, &calls
}

func internalError(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		// S3 may send whitespace before an error it found after the 200.
		io.WriteString(w, "\n  \n"+`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
	}
}

func copyResult(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	switch {
	case r.Method == http.MethodPost:
		io.WriteString(w, `<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"done"</ETag></CompleteMultipartUploadResult>`)
	case r.URL.Query().Has("partNumber"):
		io.WriteString(w, `<CopyPartResult><ETag>"done"</ETag></CopyPartResult>`)
	default:
		io.WriteString(w, `<CopyObjectResult><ETag>"done"</ETag></CopyObjectResult>`)
	}
}

// documentedCalls are the three operations S3 documents may answer 200 OK
// with an error in the body; each returns the ETag of what it made.
var documentedCalls = []struct {
	name string
	call func(c *s3.Client) (string, error)
}{
	{"CopyObject", func(c *s3.Client) (string, error) {
		out, err := c.CopyObject(context.Background(), &s3.CopyObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), CopySource: aws.String("src/k")})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.CopyObjectResult.ETag), nil
	}},
	{"UploadPartCopy", func(c *s3.Client) (string, error) {
		out, err := c.UploadPartCopy(context.Background(), &s3.UploadPartCopyInput{Bucket: aws.String("b"), Key: aws.String("k"),
			CopySource: aws.String("src/k"), UploadId: aws.String("u"), PartNumber: aws.Int32(1)})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.CopyPartResult.ETag), nil
	}},
	{"CompleteMultipartUpload", func(c *s3.Client) (string, error) {
		out, err := c.CompleteMultipartUpload(context.Background(), &s3.CompleteMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String("k"),
			UploadId: aws.String("u"), MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(`"p"`)}}}})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}},
}

// trustedAttempts is how many times s5cmd, s3tar and rclone try a request.
const trustedAttempts = 10

// A 200 OK with an error in its body (the operation did not happen) is
// retried as the 500 it is: nine of them in a row still end in the
// operation done, on the tenth attempt; ten end in a transient failure
// that says how often and how long it was tried, never in a success.
func TestErrorIn200IsRetried(t *testing.T) {
	for _, op := range documentedCalls {
		t.Run(op.name+"/nine", func(t *testing.T) {
			ts, calls := failFirst(trustedAttempts-1, internalError(http.StatusOK), copyResult)
			defer ts.Close()
			etag, err := op.call(testClient(ts.URL, Config{Limits: &Limits{}, MaxBackoff: time.Millisecond}))
			if err != nil || etag != `"done"` || calls.Load() != trustedAttempts {
				t.Fatalf("ETag %q, error %v after %d calls; want the operation done on call %d", etag, err, calls.Load(), trustedAttempts)
			}
		})
		t.Run(op.name+"/ten", func(t *testing.T) {
			ts, calls := failFirst(1<<30, internalError(http.StatusOK), copyResult)
			defer ts.Close()
			etag, err := op.call(testClient(ts.URL, Config{Limits: &Limits{}, MaxBackoff: time.Millisecond}))
			var gave *GaveUpError
			var mae *retry.MaxAttemptsError
			switch {
			case err == nil:
				t.Fatalf("ETag %q: an error in a 200 taken for success", etag)
			case calls.Load() != trustedAttempts || !errors.As(err, &gave) || gave.Attempts != trustedAttempts || !errors.As(err, &mae):
				t.Fatalf("%d calls, error %v; want %d calls and a GaveUpError over the SDK's MaxAttemptsError", calls.Load(), err, trustedAttempts)
			case !s3err.Transient(err) || !s3err.IsCode(err, "InternalError"):
				t.Errorf("error %v: want it transient, with S3's code InternalError", err)
			}
		})
	}
}

// The SDK's own count (1,000 attempts) is not what stops a request when
// the client's every attempt fails: its outage budget is. A request then
// ends soon after the budget is spent, the next fails on its first
// failure, and one answer ends the outage.
func TestOutageStopsRetries(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if down.Load() {
			internalError(http.StatusInternalServerError)(w, r)
			return
		}
		w.Header().Set("Content-Length", "0")
		w.Header().Set("ETag", `"e"`)
	}))
	defer ts.Close()
	const budget = 300 * time.Millisecond
	c := testClient(ts.URL, Config{Limits: &Limits{}, Attempts: 1000, MaxBackoff: 20 * time.Millisecond, GiveUpAfter: budget})
	head := func() error {
		_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
		return err
	}
	start := time.Now()
	err := head()
	took := time.Since(start)
	var oe *OutageError
	var gave *GaveUpError
	if !errors.As(err, &oe) || !errors.As(err, &gave) || took < budget || took > budget+time.Second {
		t.Fatalf("after %v and %d calls: %v; want an OutageError soon after %v", took, calls.Load(), err, budget)
	}
	if !strings.Contains(err.Error(), "gave up after") || !s3err.Transient(err) {
		t.Errorf("%v: want it to say how often it was tried, and be transient", err)
	}
	calls.Store(0)
	if err := head(); !errors.As(err, &oe) || calls.Load() != 1 {
		t.Fatalf("during the outage: %d calls, %v; want one call and an OutageError", calls.Load(), err)
	}
	down.Store(false)
	if err := head(); err != nil {
		t.Fatalf("S3 back: %v", err)
	}
	down.Store(true)
	calls.Store(0)
	if err := head(); !errors.As(err, &oe) || calls.Load() < 3 {
		t.Fatalf("a new outage after an answer: %d calls, %v; want retries again until the budget is spent", calls.Load(), err)
	}
}

// The budget counts a run of failures with no answer between, not
// failures over a client's life, and not across an idle spell.
func TestOutageBudget(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	o := newOutage(5 * time.Minute)
	o.now = c.now
	cause := errors.New("500")
	o.fail()
	c.add(4 * time.Minute)
	o.fail()
	if err := o.spent(cause); err != nil {
		t.Fatalf("4 minutes into an outage: %v", err)
	}
	c.add(2 * time.Minute)
	o.fail()
	var oe *OutageError
	if err := o.spent(cause); !errors.As(err, &oe) || oe.Failed != 3 || oe.Over != 6*time.Minute || !errors.Is(err, cause) {
		t.Fatalf("6 minutes into an outage: %v; want an OutageError over 6m, 3 failed, wrapping the cause", err)
	}
	o.answer()
	if err := o.spent(cause); err != nil {
		t.Fatalf("after an answer: %v", err)
	}
	// Rare failures over hours, each answered around: never spent.
	for range 1000 {
		o.fail()
		c.add(time.Minute)
		o.answer()
	}
	if err := o.spent(cause); err != nil {
		t.Fatalf("after 1,000 isolated failures: %v", err)
	}
	// A failure, an idle hour, a failure: not one outage.
	o.fail()
	c.add(time.Hour)
	o.fail()
	if err := o.spent(cause); err != nil {
		t.Fatalf("two failures an idle hour apart: %v", err)
	}
}
