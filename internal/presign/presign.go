// Package presign makes download links: presigned GET URLs of an archive
// and its report. The CLI signs them with the caller's credentials (s3zip
// presign, --presign on create and status); the finalizer Lambda signs them
// with its role's when a request asks (options.presign).
//
// A link acts with the rights of the credentials that signed it and lives
// no longer than they do: S3 refuses it once they expire, whatever its own
// X-Amz-Expires. Expiry says when that is, where the credentials tell.
package presign

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// SigV4 query signing takes X-Amz-Expires in whole seconds from 1 to
// 604800 (7 days).
const (
	MinLifetime = time.Second
	MaxLifetime = 7 * 24 * time.Hour
)

// ParseLifetime reads a link's lifetime as a user writes it: a Go duration
// (90m, 1h30m) or whole days (7d). The error starts with the value, so a
// caller puts the flag or field before it.
func ParseLifetime(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration: want e.g. 30m, 12h or 7d", s)
	case d < MinLifetime || d > MaxLifetime:
		return 0, fmt.Errorf("%s: a presigned link lives 1s to 7d (168h), S3's limit for SigV4", s)
	case d%time.Second != 0:
		return 0, fmt.Errorf("%s: a presigned link's lifetime is whole seconds", s)
	}
	return d, nil
}

// Links are the download links of a finished run, in the shape both the
// CLI's --json ("links") and the execution's output ("links") give them.
type Links struct {
	Archive string `json:"archive"` // presigned GET URL of the archive
	// Archives are every archive's of a split run, in order (Archive is
	// the first's); absent for one archive.
	Archives []string  `json:"archives,omitempty"`
	Report   *string   `json:"report"`  // of its report; null when none was written
	Expires  time.Time `json:"expires"` // when S3 stops honouring them (sooner if the signing credentials expire)
}

// Object names an S3 object to link to.
type Object struct{ Bucket, Key string }

// Getter is what signing a GET needs of the SDK (s3.PresignClient).
type Getter interface {
	PresignGetObject(context.Context, *s3.GetObjectInput, ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// GetURL signs a GET of o for d.
func GetURL(ctx context.Context, p Getter, o Object, d time.Duration) (string, error) {
	req, err := p.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &o.Bucket, Key: &o.Key}, s3.WithPresignExpires(d))
	if err != nil {
		return "", fmt.Errorf("presign a GET of s3://%s/%s: %w", o.Bucket, o.Key, err)
	}
	return req.URL, nil
}

// Signer signs links with a client's credentials, region and endpoint.
type Signer struct{ Client *s3.Client }

// SignLinks signs the archive's link and, when report is not nil, the
// report's, for d from now. When the credentials expire sooner (SSO, an
// assumed role), the links die with them: Expires says when, and the
// warning says why. Session credentials whose end is not known (a Lambda
// role's, from the environment) get a warning too.
func (s Signer) SignLinks(ctx context.Context, archive Object, report *Object, d time.Duration) (*Links, string, error) {
	p := s3.NewPresignClient(s.Client)
	a, err := GetURL(ctx, p, archive, d)
	if err != nil {
		return nil, "", err
	}
	l := &Links{Archive: a}
	if report != nil {
		r, err := GetURL(ctx, p, *report, d)
		if err != nil {
			return nil, "", err
		}
		l.Report = &r
	}
	var creds aws.Credentials
	if c := s.Client.Options().Credentials; c != nil {
		creds, _ = c.Retrieve(ctx) // signing just retrieved them: cached
	}
	var warning string
	l.Expires, warning = Expiry(time.Now(), d, creds)
	return l, warning, nil
}

// Expiry is when links signed at now for d with creds stop working, and a
// warning when that may be before d is up.
func Expiry(now time.Time, d time.Duration, creds aws.Credentials) (time.Time, string) {
	expires := now.Add(d).UTC().Truncate(time.Second)
	switch {
	case creds.CanExpire && creds.Expires.Before(expires):
		until := creds.Expires.UTC().Truncate(time.Second)
		return until, fmt.Sprintf("the links were signed for %s, but with temporary credentials that expire at %s: they stop working then; "+
			"sign with longer-lived credentials (an IAM user's keys) for a longer link", d, until.Format(time.RFC3339))
	case !creds.CanExpire && creds.SessionToken != "":
		return expires, fmt.Sprintf("the links were signed for %s with session credentials whose end is not known here (a Lambda role's): "+
			"they stop working when that session ends, which may be sooner; sign with an IAM user's keys (s3zip presign) for a link that must last", d)
	}
	return expires, ""
}
