package main

// Download links: `s3zip presign s3://bucket/key`, and --presign on create
// and status, print presigned GET URLs of an archive and its report.
//
// The caller signs, here, with the credentials the command runs with; the
// deployed workflow signs nothing. So the deployment's IAM needs nothing
// new, and a link can do no more, and lives no longer, than the credentials
// that signed it: S3 refuses it once they expire or lose s3:GetObject, even
// before its own expiry. A link signed in a Lambda would die with the
// Lambda's session credentials, long before the 7 days SigV4 allows.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Presigned URLs are signed with SigV4 query parameters, whose
// X-Amz-Expires is whole seconds from 1 to 604800 (7 days).
const (
	minPresign = time.Second
	maxPresign = 7 * 24 * time.Hour
)

// parseExpiry reads a link's lifetime as the user typed it for --flag: a
// Go duration (90m, 1h30m) or whole days (7d).
func parseExpiry(cmd, flagName, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	}
	switch {
	case err != nil:
		return 0, usageErrorf("%s: --%s %q is not a duration: want e.g. 30m, 12h or 7d", cmd, flagName, s)
	case d < minPresign || d > maxPresign:
		return 0, usageErrorf("%s: --%s %s: a presigned link lives 1s to 7d (168h), S3's limit for SigV4", cmd, flagName, s)
	case d%time.Second != 0:
		return 0, usageErrorf("%s: --%s %s: a presigned link's lifetime is whole seconds", cmd, flagName, s)
	}
	return d, nil
}

// presignFlag is --presign, for create and status.
func presignFlag(fs *flags) *string {
	return fs.String("presign", "", "also print download links (presigned GET URLs) of the archive and its report, valid for `DURATION`: 1s to 7d (e.g. 24h)")
}

// presignExpiry is --presign's lifetime, 0 when it is not given.
func presignExpiry(cmd string, fs *flags, value string) (time.Duration, error) {
	if !fs.given("presign") {
		return 0, nil
	}
	return parseExpiry(cmd, "presign", value)
}

// links are the download links of a finished run (create --json and
// status --json: "links").
type links struct {
	Archive string    `json:"archive"` // presigned GET URL of the archive
	Report  *string   `json:"report"`  // of its report; null when none was written
	Expires time.Time `json:"expires"` // when S3 stops honouring them (sooner if the signing credentials expire)
}

// presigner is what signing a GET needs of the SDK (s3.PresignClient).
type presigner interface {
	PresignGetObject(context.Context, *s3.GetObjectInput, ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// presignGet signs a GET of the object at uri (s3://bucket/key) for d.
func presignGet(ctx context.Context, p presigner, uri string, d time.Duration) (string, error) {
	bucket, key, err := parseS3ObjectURI(uri)
	if err != nil {
		return "", err
	}
	req, err := p.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key}, s3.WithPresignExpires(d))
	if err != nil {
		return "", fmt.Errorf("presign a GET of %s: %w", uri, err)
	}
	return req.URL, nil
}

// signLinks signs, with client's credentials, the archive's link and, when
// there is a report, the report's, for d from now. When the credentials
// expire sooner (SSO, an assumed role), the links die with them: Expires
// says when, and the warning says why.
func signLinks(ctx context.Context, client *s3.Client, archive, report string, d time.Duration) (l *links, warning string, err error) {
	p := s3.NewPresignClient(client)
	a, err := presignGet(ctx, p, archive, d)
	if err != nil {
		return nil, "", err
	}
	l = &links{Archive: a}
	if report != "" {
		r, err := presignGet(ctx, p, report, d)
		if err != nil {
			return nil, "", err
		}
		l.Report = &r
	}
	var creds aws.Credentials
	if c := client.Options().Credentials; c != nil {
		creds, _ = c.Retrieve(ctx) // signing just retrieved them: cached
	}
	l.Expires, warning = linkExpiry(time.Now(), d, creds)
	return l, warning, nil
}

// linkExpiry is when links signed at now for d with creds stop working,
// and a warning when that is before d is up.
func linkExpiry(now time.Time, d time.Duration, creds aws.Credentials) (time.Time, string) {
	expires := now.Add(d).UTC().Truncate(time.Second)
	if !creds.CanExpire || !creds.Expires.Before(expires) {
		return expires, ""
	}
	until := creds.Expires.UTC().Truncate(time.Second)
	return until, fmt.Sprintf("the links were signed for %s, but with temporary credentials that expire at %s: they stop working then; "+
		"sign with longer-lived credentials (an IAM user's keys) for a longer link", d, until.Format(time.RFC3339))
}

// signLinksAsCaller signs a deployed run's links with the credentials and
// S3 endpoint (S3_ENDPOINT, AWS_ENDPOINT_URL_S3) this command runs with.
func signLinksAsCaller(ctx context.Context, archive, report string, d time.Duration) (*links, string, error) {
	client, err := newS3Client(ctx, "")
	if err != nil {
		return nil, "", err
	}
	return signLinks(ctx, client, archive, report, d)
}

// printLinks is the summary's lines for the links, if any.
func printLinks(w io.Writer, l *links) {
	if l == nil {
		return
	}
	fmt.Fprintf(w, "link        %s\n", l.Archive)
	if l.Report != nil {
		fmt.Fprintf(w, "report link %s\n", *l.Report)
	}
	fmt.Fprintf(w, "links until %s (or until the credentials that signed them expire)\n", l.Expires.Format(time.RFC3339))
}

func runPresign(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("presign", "s3zip presign s3://bucket/key [--expires DURATION]",
		"Print a presigned GET URL of the object: anyone with it can download the object with a plain\n"+
			"HTTP GET (curl, a browser), no credentials, until it expires. It is signed here with your\n"+
			"credentials, so it lives no longer than they do and can read only what they can.")
	expiresFlag := fs.String("expires", "1h", "the link's lifetime, `DURATION`: 1s to 7d (e.g. 90m, 24h, 7d)")
	endpoint := fs.String("endpoint", "", "S3 endpoint `URL` (default: AWS, or $S3_ENDPOINT / $AWS_ENDPOINT_URL_S3)")
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	if err := wantArgs("presign", pos, "s3://bucket/key"); err != nil {
		return err
	}
	bucket, key, err := parseS3ObjectURI(pos[0])
	if err != nil {
		return usageErrorf("presign: %v", err)
	}
	d, err := parseExpiry("presign", "expires", *expiresFlag)
	if err != nil {
		return err
	}
	// Signing asks nothing of S3: read the object's first byte first, so a
	// link to a missing object, or one these credentials cannot read, is
	// refused here rather than by whoever opens it.
	client, err := connect(ctx, "presign", *endpoint, bucketCheck{role: "object", bucket: bucket, object: key})
	if err != nil {
		return err
	}
	url, err := presignGet(ctx, s3.NewPresignClient(client), pos[0], d)
	if err != nil {
		return fmt.Errorf("presign: %w", err)
	}
	_, err = fmt.Fprintln(stdout, url)
	return err
}
