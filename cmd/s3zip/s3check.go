package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3err"
)

// checkEndpoint rejects an endpoint the SDK would only fail on at the first
// request, as a "transient" error after its retries. The endpoint must be an
// http or https URL with a host.
func checkEndpoint(cmd, endpoint string) error {
	what := "--endpoint"
	if endpoint == "" {
		endpoint, what = endpointFromEnv(), "the endpoint in S3_ENDPOINT or AWS_ENDPOINT_URL_S3"
	}
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		hint := ""
		if !strings.Contains(endpoint, "://") {
			hint = fmt.Sprintf(" (e.g. http://%s)", strings.TrimPrefix(endpoint, "//"))
		}
		return usageErrorf("%s: %s, %q, is not a URL: want http:// or https:// and a host%s", cmd, what, endpoint, hint)
	}
	return nil
}

// connect starts every network command. It checks the endpoint, builds the
// client with the credentials it looks up, and asks each of checks once, so
// that what is wrong with the setup is one line, with exit code 2 or 3,
// before the command's first real request.
func connect(ctx context.Context, cmd, endpoint string, checks ...bucketCheck) (*s3.Client, error) {
	if err := checkEndpoint(cmd, endpoint); err != nil {
		return nil, err
	}
	client, err := newS3Client(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if err := preflight(ctx, client, endpointOrEnv(endpoint), checks); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return client, nil
}

// once is an S3 option for the up-front checks. It makes one attempt, so a
// dead endpoint is reported at once instead of after the SDK's backoff.
func once(o *s3.Options) { o.RetryMaxAttempts = 1 }

// bucketCheck is one bucket a run needs, and why, for the message.
type bucketCheck struct {
	role, bucket string
	list         bool   // the run lists it as a --source, so ask with ListObjectsV2 under prefix
	prefix       string // for list
	object       string // a key the run reads, such as the manifest, to ask for with a GET of its first byte
	ifMissing    string // what to do when the bucket does not exist, by default create it or fix the name
}

// preflightS3 is what the up-front checks need of S3.
type preflightS3 interface {
	HeadBucket(context.Context, *s3.HeadBucketInput, ...func(*s3.Options)) (*s3.HeadBucketOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// preflight asks S3 once about each bucket a run needs before anything is
// created, so that a wrong endpoint, rejected credentials or a missing
// bucket is one clear message, not a failure deep in the run followed by a
// clean-up that fails the same way. Answers that do not settle the
// question, such as a 5xx or a 403 on HeadBucket where the role may lack
// s3:ListBucket, let the run go on and meet them again with its retries.
func preflight(ctx context.Context, c preflightS3, endpoint string, checks []bucketCheck) error {
	seen := map[string]bool{}
	for _, ck := range checks {
		id := ck.bucket + "\x00" + ck.object + "\x00" + fmt.Sprint(ck.list)
		if seen[id] {
			continue
		}
		seen[id] = true
		var err error
		switch {
		case ck.object != "":
			var out *s3.GetObjectOutput
			out, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &ck.bucket, Key: &ck.object, Range: aws.String("bytes=0-0")}, once)
			if err == nil {
				out.Body.Close()
			}
		case ck.list:
			_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &ck.bucket, Prefix: &ck.prefix, MaxKeys: aws.Int32(1)}, once)
		default:
			_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &ck.bucket}, once)
		}
		if err := describeSetupError(err, endpoint, ck); err != nil {
			return err
		}
	}
	return nil
}

// describeSetupError turns the answer to a preflight request into the one
// thing the user has to fix, or nil when there is nothing to say.
func describeSetupError(err error, endpoint string, ck bucketCheck) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	where := endpoint
	if where == "" {
		where = "the AWS S3 endpoint"
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	var netErr error
	switch {
	case errors.As(err, &oe):
		netErr = oe
	case errors.As(err, &de):
		netErr = de
	case errors.As(err, &ne) && !ne.Timeout():
		netErr = rootCause(err)
	}
	if netErr != nil {
		return unreachablef("cannot reach S3 at %s: %v; check --endpoint (or S3_ENDPOINT) and that the server is running", where, netErr)
	}
	status, code := s3err.Status(err)
	switch code {
	case "SignatureDoesNotMatch":
		return unreachablef("S3 at %s rejected the credentials (SignatureDoesNotMatch: the secret key does not match the access key); check AWS_SECRET_ACCESS_KEY or your AWS profile", where)
	case "InvalidAccessKeyId", "XAdminUserNotFound": // versitygw's name for it
		return unreachablef("S3 at %s does not know the access key (%s); check AWS_ACCESS_KEY_ID or your AWS profile", where, code)
	case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		return unreachablef("S3 at %s rejected the session token (%s); refresh your credentials", where, code)
	case "AccessDenied":
		return unreachablef("%s s3://%s/%s: access denied; the credentials need permission to read it", ck.role, ck.bucket, ck.prefix+ck.object)
	case "NoSuchBucket":
		return ck.missingBucket(where)
	case "NoSuchKey":
		if ck.role == "archive" {
			// A run split by create --split-size wrote numbered archives, not the key it was given.
			return usageErrorf("archive s3://%s/%s does not exist; check the bucket, the key and --endpoint (a split run's archives are s3://%s/%s, %s, …: one command each)",
				ck.bucket, ck.object, ck.bucket, create.ArchiveKey(ck.object, 0), path.Base(create.ArchiveKey(ck.object, 1)))
		}
		return usageErrorf("%s s3://%s/%s does not exist; check the bucket, the key and --endpoint", ck.role, ck.bucket, ck.object)
	}
	switch {
	case status == http.StatusNotFound && ck.object == "" && !ck.list:
		// HEAD answers carry no error code, so a 404 on HeadBucket is the bucket.
		return ck.missingBucket(where)
	case status == http.StatusRequestedRangeNotSatisfiable:
		return nil // an empty object, where for a manifest the planner says so
	}
	return nil
}

// missingBucket says that the checked bucket does not exist at where, and
// what to do.
func (ck bucketCheck) missingBucket(where string) error {
	todo := ck.ifMissing
	if todo == "" {
		todo = "create it or fix the bucket name"
	}
	return usageErrorf("%s bucket %q does not exist at %s; %s", ck.role, ck.bucket, where, todo)
}

// rootCause returns the innermost error, what the network said, without the
// SDK's layers of operation names around it.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
