package main

// This file makes download links. `s3zip presign s3://bucket/key`, and
// --presign on create and status, print presigned GET URLs of an archive and
// its report.
//
// The caller signs here, with the credentials the command runs with, so a
// link can do no more, and lives no longer, than they. S3 refuses it once
// they expire or lose s3:GetObject, even before its own expiry. A request's
// options.presign has the finalizer sign instead, with its role's session
// credentials, which end far sooner than the 7 days SigV4 allows.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/presign"
)

// parseExpiry reads a link's lifetime as the user typed it for --flag, as a
// Go duration such as 90m or 1h30m, or as whole days such as 7d.
func parseExpiry(cmd, flagName, s string) (time.Duration, error) {
	d, err := presign.ParseLifetime(s)
	if err != nil {
		return 0, usageErrorf("%s: --%s %v", cmd, flagName, err)
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

// links are the download links of a finished run, printed as "links" by
// create --json and status --json.
type links = presign.Links

// signLinks signs the links of the archive and of the report, when there is
// one, with client's credentials for d from now. Both are s3:// URIs.
func signLinks(ctx context.Context, client *s3.Client, archive, report string, d time.Duration) (*links, string, error) {
	a, err := objectOf(archive)
	if err != nil {
		return nil, "", err
	}
	var r *presign.Object
	if report != "" {
		o, err := objectOf(report)
		if err != nil {
			return nil, "", err
		}
		r = &o
	}
	return presign.Signer{Client: client}.SignLinks(ctx, a, r, d)
}

// signRunLinks signs a run's links to its archive and report, and to each
// archive of a split run.
func signRunLinks(ctx context.Context, client *s3.Client, out *create.FinalizeOutput, d time.Duration) (*links, string, error) {
	l, warning, err := signLinks(ctx, client, out.Archive.URI, out.Report, d)
	if err != nil {
		return nil, "", err
	}
	for _, a := range out.Archives {
		al, _, err := signLinks(ctx, client, a.URI, "", d)
		if err != nil {
			return nil, "", err
		}
		l.Archives = append(l.Archives, al.Archive)
	}
	return l, warning, nil
}

func objectOf(uri string) (presign.Object, error) {
	bucket, key, err := parseS3ObjectURI(uri)
	return presign.Object{Bucket: bucket, Key: key}, err
}

// signLinksAsCaller signs a deployed run's links with the credentials and
// the S3 endpoint this command runs with, which S3_ENDPOINT or
// AWS_ENDPOINT_URL_S3 set.
func signLinksAsCaller(ctx context.Context, out *create.FinalizeOutput, d time.Duration) (*links, string, error) {
	client, err := newS3Client(ctx, "")
	if err != nil {
		return nil, "", err
	}
	return signRunLinks(ctx, client, out, d)
}

// printLinks prints the summary's lines for the links, if any.
func printLinks(w io.Writer, l *links) {
	if l == nil {
		return
	}
	if len(l.Archives) == 0 {
		fmt.Fprintf(w, "link        %s\n", l.Archive)
	}
	for k, a := range l.Archives {
		fmt.Fprintf(w, "link %-6d %s\n", k+1, a)
	}
	if l.Report != nil {
		fmt.Fprintf(w, "report link %s\n", *l.Report)
	}
	fmt.Fprintf(w, "links until %s (or until the credentials that signed them expire)\n", l.Expires.Format(time.RFC3339))
}

func runPresign(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("presign", "s3zip presign s3://bucket/key [--expires DURATION] [--endpoint URL]",
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
	// Signing asks nothing of S3. Reading the object's first byte first means
	// a link to a missing object, or one these credentials cannot read, is
	// refused here rather than by whoever opens it.
	client, err := connect(ctx, "presign", *endpoint, bucketCheck{role: "object", bucket: bucket, object: key})
	if err != nil {
		return err
	}
	url, err := presign.GetURL(ctx, s3.NewPresignClient(client), presign.Object{Bucket: bucket, Key: key}, d)
	if err != nil {
		return fmt.Errorf("presign: %w", err)
	}
	_, err = fmt.Fprintln(stdout, url)
	return err
}
