// Package lambdaenv builds what every s3zip Lambda needs once per cold
// start: the JSON logger, its workflow's configuration and the S3 client.
// It knows no workflow: each function's main gives its own configuration
// reader and error namer.
package lambdaenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3rate"
)

// Env is a Lambda's shared setup, with its workflow's configuration C.
type Env[C any] struct {
	Log    *slog.Logger
	Config C
	S3     *s3.Client
}

// Load reads the environment, the configuration with configFromEnv
// (create.ConfigFromEnv, extract.ConfigFromEnv). It returns errors, never
// panics.
func Load[C any](ctx context.Context, function string, configFromEnv func(getenv func(string) string) (C, error)) (*Env[C], error) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo})).With("function", function)
	if limit, ok := MemoryLimit(os.Getenv); ok {
		debug.SetMemoryLimit(limit)
	}
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", function, err)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: AWS configuration: %w", function, err)
	}
	// Every request to a bucket passes one limiter that learns the rate S3
	// serves from its SlowDowns (internal/s3rate); s3rate.DefaultAttempts
	// at any other failure, within the client's outage budget; connections
	// that go quiet are abandoned and retried.
	timeouts, err := s3rate.TimeoutsFromEnv(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", function, err)
	}
	client := s3.NewFromConfig(awsCfg, s3rate.Options(s3rate.Config{Timeouts: timeouts}), func(o *s3.Options) {
		// Checksums are set explicitly where they matter (UploadPart);
		// elsewhere the SDK adds none a request does not require.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		if ep := os.Getenv("S3_ENDPOINT"); ep != "" { // local runs only
			o.BaseEndpoint = aws.String(ep)
			o.UsePathStyle = true
		}
	})
	return &Env[C]{Log: log, Config: cfg, S3: client}, nil
}

// Start runs handler as the Lambda's handler. Errors are reported with the
// name errorType gives them (create.ErrorType, extract.ErrorType:
// RequestError, TransientError, …) however deeply they are wrapped, so that
// the state machine's Retry and Catch see them.
//
// An invocation whose S3 requests S3 answered with SlowDown says how many,
// in one log line ({"msg":"s3 slowdowns","slowDowns":N}): the constructs'
// monitoring counts them from the logs (infra/lib/monitoring.ts).
func Start[In, Out any](handler func(context.Context, In) (Out, error), errorType func(error) string) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	lambda.Start(func(ctx context.Context, in In) (Out, error) {
		before := s3rate.Default.Throttled()
		out, err := handler(ctx, in)
		ReportSlowDowns(log, s3rate.Default.Throttled()-before)
		if err != nil {
			return out, messages.InvokeResponse_Error{Type: errorType(err), Message: err.Error()}
		}
		return out, nil
	})
}

// ReportSlowDowns logs the SlowDown answers an invocation met, when it met
// any: the line the monitoring's metric filter counts.
func ReportSlowDowns(log *slog.Logger, n int64) {
	if n > 0 {
		log.Info(SlowDownsMessage, "slowDowns", n)
	}
}

// SlowDownsMessage is the log message of ReportSlowDowns' line.
const SlowDownsMessage = "s3 slowdowns"

// Must is Load's environment, or the Lambda's end with Load's error: a
// function that cannot read its configuration has nothing to serve.
func Must[C any](env *Env[C], err error) *Env[C] {
	if err != nil {
		Fatal(err)
	}
	return env
}

// Fatal reports a start-up error the way Lambda shows it, and exits.
func Fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// MemoryShare is the part of a Lambda's memory the Go heap may use before
// the collector works harder instead of letting it grow: the rest is the
// runtime's, the stacks' and the binary's. Without a limit Go lets the heap
// reach twice what is live, so a planner with 900 MB live is killed at
// 1,800 MB in a 2,048 MB function although it fits.
const MemoryShare = 0.85

// MemoryLimit is the Go memory limit for this Lambda: MemoryShare of the
// function's memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, in MB), unless
// GOMEMLIMIT is set, which the Go runtime has already applied.
func MemoryLimit(getenv func(string) string) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	mb, err := strconv.ParseInt(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64)
	if err != nil || mb <= 0 {
		return 0, false
	}
	return int64(float64(mb<<20) * MemoryShare), true
}
