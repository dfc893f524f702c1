package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/s3zip/s3zip/internal/s3rate"
)

// defaultRegion is used when neither the environment nor a profile names one.
const defaultRegion = "us-east-1"

// endpointFromEnv is the S3 endpoint the environment names, if any:
// S3_ENDPOINT, then AWS_ENDPOINT_URL_S3.
func endpointFromEnv() string {
	for _, v := range []string{"S3_ENDPOINT", "AWS_ENDPOINT_URL_S3"} {
		if e := os.Getenv(v); e != "" {
			return e
		}
	}
	return ""
}

// newS3Client builds the S3 client every network command uses, from the
// default credential and region chain. An endpoint, from the --endpoint
// flag or else S3_ENDPOINT or AWS_ENDPOINT_URL_S3, selects an S3-compatible
// server with path-style addressing. Checksums are sent and validated only
// when an operation requires them, as ranged GETs carry none and uploads set
// their own.
func newS3Client(ctx context.Context, endpoint string) (*s3.Client, error) {
	if endpoint == "" {
		endpoint = endpointFromEnv()
	}
	cfg, err := loadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = defaultRegion
	}
	// Every request to a bucket passes one limiter that learns the rate S3
	// serves from its SlowDowns, and internal/s3rate abandons quiet
	// connections.
	timeouts, err := s3rate.TimeoutsFromEnv(os.Getenv)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return s3.NewFromConfig(cfg, s3rate.Options(s3rate.Config{Timeouts: timeouts}), func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}

// loadAWSConfig loads the default credential and region chain and looks the
// credentials up at once. Without them the first request would fail after
// the SDK's retries, as whatever that request was, so every command says so
// before it asks anything of anyone.
func loadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(sdkLogger{}))
	if err != nil {
		return cfg, unreachablef("load the AWS configuration: %v; check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE", err)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			return cfg, err
		}
		return cfg, unreachablef("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (aws configure, aws sso login); looking them up said: %v", rootCause(err))
	}
	return cfg, nil
}

// parseS3URI splits s3://bucket/key. The key may be empty, as in
// "s3://bucket" or "s3://bucket/", since a prefix may name a whole bucket.
// Commands that need an object use parseS3ObjectURI.
func parseS3URI(s string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an S3 URI: want s3://bucket/key", s)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("S3 URI %q has no bucket: want s3://bucket/key", s)
	}
	return bucket, key, nil
}

// parseS3ObjectURI is parseS3URI for a URI that must name an object.
func parseS3ObjectURI(s string) (bucket, key string, err error) {
	bucket, key, err = parseS3URI(s)
	if err == nil && (key == "" || strings.HasSuffix(key, "/")) {
		err = fmt.Errorf("S3 URI %q names no object: want s3://bucket/key", s)
	}
	return bucket, key, err
}

// sdkLogger prints the SDK's warnings as its default logger does, but for
// the IMDS client's "falling back to IMDSv1". Looking for credentials off
// EC2 says it before s3zip's own line says what is missing and what to do.
type sdkLogger struct{}

func (sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "falling back to IMDSv1") {
		return
	}
	fmt.Fprintf(os.Stderr, "SDK %s %s %s\n", time.Now().Format("2006/01/02 15:04:05"), c, msg)
}
