package s3rate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/s3zip/s3zip/internal/s3err"
)

// Config is how a client's requests are held. The zero value is the
// defaults.
type Config struct {
	// Limits are the limiters the client's requests pass; nil: Default.
	Limits *Limits
	// Attempts is how many times a request that fails for another reason
	// than throttling is tried (default DefaultAttempts).
	Attempts int
	// ThrottleAttempts is how many times a throttled request is tried
	// (default 40: with backoff up to MaxBackoff, about ten minutes, while
	// the limiter brings the rate down to what S3 serves).
	ThrottleAttempts int
	// MaxBackoff is the longest wait between attempts (default 20 s).
	MaxBackoff time.Duration
	// GiveUpAfter is the client's retry budget: once every attempt it made
	// has failed for this long, with no answer between, a failing request
	// is not tried again (default DefaultGiveUpAfter).
	GiveUpAfter time.Duration
	// Timeouts of the HTTP client; zero fields take DefaultTimeouts'.
	Timeouts Timeouts
}

// DefaultAttempts is how many times a request that fails, not throttled,
// is tried: as often as the tools users trust try one (s5cmd 10, s3tar 10
// with backoff capped at 20 s, rclone 10 low-level retries). A run of a
// million objects makes millions of requests: at S3's rare 500s a few
// thousand of them fail once, and a handful twice or more.
const DefaultAttempts = 10

// DefaultGiveUpAfter is how long a client goes on retrying while none of
// its attempts is answered: longer than the ten attempts of one request
// (about a minute of backoff, three at most), so it stops a run only when
// S3 is out for everyone.
const DefaultGiveUpAfter = 5 * time.Minute

func (c Config) withDefaults() Config {
	if c.Limits == nil {
		c.Limits = Default
	}
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
	}
	if c.GiveUpAfter <= 0 {
		c.GiveUpAfter = DefaultGiveUpAfter
	}
	if c.ThrottleAttempts <= 0 {
		c.ThrottleAttempts = 40
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 20 * time.Second
	}
	c.Timeouts = c.Timeouts.withDefaults()
	return c
}

// Options configures an S3 client as cfg says: its requests pass the
// limiter of their bucket and class, are retried by a retryer without the
// SDK's retry quota (within the client's outage budget instead), and are
// sent by an HTTP client with timeouts. A request the client stops trying
// fails with a *GaveUpError. A client
// option given after it (a test's HTTPClient, say) still wins.
func Options(cfg Config) func(*s3.Options) {
	cfg = cfg.withDefaults()
	limited := LimiterOnly(cfg)
	return func(o *s3.Options) {
		limited(o)
		o.HTTPClient = NewHTTPClient(cfg.Timeouts)
	}
}

// LimiterOnly is Options without the HTTP client: the limiter and the
// retryer on a client whose transport is a test's own.
func LimiterOnly(cfg Config) func(*s3.Options) {
	cfg = cfg.withDefaults()
	return func(o *s3.Options) {
		out := newOutage(cfg.GiveUpAfter)
		r := newRetryer(cfg, out)
		o.Retryer = r
		o.RetryMaxAttempts = 0 // the retryer says
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return addLimiter(stack, cfg.Limits, r, out)
		})
	}
}

// bucketKey holds the request's bucket, from its input, for the attempts.
type bucketKey struct{}

func addLimiter(stack *middleware.Stack, limits *Limits, r aws.Retryer, out *outage) error {
	if _, ok := stack.Finalize.Get("Retry"); !ok {
		return nil // a presigner's stack: it sends nothing
	}
	// Before the retry middleware: a request given up says how often it was
	// tried and for how long.
	err := stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("s3rate.GaveUp",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			start := time.Now()
			res, md, err := next.HandleFinalize(ctx, in)
			var (
				mae *retry.MaxAttemptsError
				oe  *OutageError
			)
			if err != nil && (errors.As(err, &mae) || errors.As(err, &oe)) {
				attempts, _ := retry.GetAttemptResults(md)
				err = &GaveUpError{Attempts: len(attempts.Results), Elapsed: time.Since(start), Err: err}
			}
			return res, md, err
		}), "Retry", middleware.Before)
	if err != nil {
		return err
	}
	err = stack.Initialize.Add(middleware.InitializeMiddlewareFunc("s3rate.Bucket",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, bucketKey{}, bucketOf(in.Parameters)), in)
		}), middleware.Before)
	if err != nil {
		return err
	}
	// After the retry middleware: every attempt waits for its token and
	// tells the limiter, and the outage budget, how it went.
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("s3rate.Limiter",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			bucket, _ := ctx.Value(bucketKey{}).(string)
			l := limits.For(bucket, classOf(awsmiddleware.GetOperationName(ctx)))
			if err := l.Wait(ctx); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			res, md, err := next.HandleFinalize(ctx, in)
			err = conflictToRetry(awsmiddleware.GetOperationName(ctx), err)
			switch {
			case err == nil:
				l.Succeeded()
			case IsThrottle(err):
				l.Throttled()
			}
			switch {
			case err == nil:
				out.answer()
			case errors.Is(err, context.Canceled):
			case r.IsErrorRetryable(err):
				out.fail()
			default:
				out.answer() // S3 answered, with a refusal no retry changes
			}
			return res, md, err
		}), "Retry", middleware.After)
}

// bucketOf is the Bucket field of an S3 operation's input, "" when it has
// none (ListBuckets).
func bucketOf(params any) string {
	v := reflect.ValueOf(params)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("Bucket")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return ""
	}
	s, _ := f.Elem().Interface().(string)
	return s
}

// classOf is the class S3 counts an operation in.
func classOf(op string) Class {
	switch op {
	case "GetObject", "HeadObject", "ListObjectsV2", "ListObjects", "ListParts", "ListMultipartUploads",
		"GetObjectAttributes", "HeadBucket", "GetObjectTagging", "ListObjectVersions", "GetBucketLocation":
		return Read
	}
	return Write
}

// IsThrottle says whether err is S3 asking for fewer requests: 503 SlowDown
// (or any 503: a HEAD's has no body to name it).
func IsThrottle(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "SlowDown" {
		return true
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusServiceUnavailable
}

// retryer is the standard retryer without its retry quota, trying a
// throttled request up to ThrottleAttempts times and any other failure
// up to Attempts, with full-jitter exponential backoff, while the
// client's outage budget lasts.
type retryer struct {
	aws.RetryerV2
	attempts, throttleAttempts int
	outage                     *outage
}

func newRetryer(cfg Config, out *outage) aws.RetryerV2 {
	std := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = max(cfg.Attempts, cfg.ThrottleAttempts)
		o.MaxBackoff = cfg.MaxBackoff
		o.Backoff = retry.NewExponentialJitterBackoff(cfg.MaxBackoff)
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			var c *retriedConflict
			if isStall(err) || errors.As(err, &c) {
				return aws.TrueTernary
			}
			return aws.UnknownTernary
		}))
	})
	return &retryer{RetryerV2: std, attempts: cfg.Attempts, throttleAttempts: cfg.ThrottleAttempts, outage: out}
}

// RetryDelay ends a request that failed for another reason than
// throttling once it was tried Attempts times, and any request once the
// client's outage budget is spent.
func (r *retryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if !IsThrottle(err) && attempt >= r.attempts {
		return 0, &retry.MaxAttemptsError{Attempt: attempt, Err: err}
	}
	if err := r.outage.spent(err); err != nil {
		return 0, err
	}
	return r.RetryerV2.RetryDelay(attempt, err)
}

// SlowDownAdvice is what to tell a user whose request S3 kept refusing
// with SlowDown, for a request to bucket under key; "" for any other
// error.
func SlowDownAdvice(err error, bucket, key string) string {
	if !IsThrottle(err) {
		return ""
	}
	return fmt.Sprintf("S3 kept answering 503 SlowDown for s3://%s/%s after retrying at the rate it allowed: the requests to that prefix exceed what S3 serves it "+
		"(about 5,500 GET/HEAD and 3,500 PUT/COPY/POST/DELETE a second per prefix); run with fewer workers, spread the keys over more prefixes, "+
		"or ask AWS to raise the prefix's partitions", bucket, prefixOf(key))
}

// prefixOf is key up to its last "/", the prefix S3 partitions by at least.
func prefixOf(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i+1]
		}
	}
	return ""
}

// isStall says whether err is a connection that went quiet: the idle-body
// timeout, or a net timeout.
func isStall(err error) bool {
	if errors.Is(err, ErrStalled) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retriedConflict is a conditional PutObject or CopyObject that met 409
// ConditionalRequestConflict: it wrote nothing, and S3's documentation
// says to send it again. (A completion so answered ended its upload: the
// caller starts the upload again, so it is not retried here.)
type retriedConflict struct{ error }

func (e *retriedConflict) Unwrap() error { return e.error }

// conflictToRetry marks err retryable when it is such a conflict.
func conflictToRetry(op string, err error) error {
	if err != nil && (op == "PutObject" || op == "CopyObject") && s3err.IsCode(err, "ConditionalRequestConflict") {
		return &retriedConflict{err}
	}
	return err
}
