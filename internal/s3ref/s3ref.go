// Package s3ref holds the small S3 details the create and extract workflows
// share: how a copy names its source, how an S3 failure is told by its
// status and code, and how the allowed buckets/prefixes settings read.
package s3ref

import (
	"errors"
	"net/url"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// CopySource is UploadPartCopy's x-amz-copy-source: bucket/key with the key
// percent-encoded byte by byte except unreserved characters and "/" (S3
// would read a bare "+" as a space), and the version when there is one.
func CopySource(bucket, key, version string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.WriteString(bucket)
	b.WriteByte('/')
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	if version != "" {
		b.WriteString("?versionId=" + url.QueryEscape(version))
	}
	return b.String()
}

// ParseCopySource is CopySource's inverse: an x-amz-copy-source header
// ("[/]bucket/key[?versionId=v]", the key URL-encoded) split into its
// bucket, key and version. The query is cut off before the key is decoded,
// so a key holding an encoded "?" stays whole.
func ParseCopySource(h string) (bucket, key, version string, err error) {
	path, query, _ := strings.Cut(strings.TrimPrefix(h, "/"), "?")
	if path, err = url.PathUnescape(path); err != nil {
		return "", "", "", err
	}
	bucket, key, ok := strings.Cut(path, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", "", errors.New("want bucket/key")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", "", "", err
	}
	return bucket, key, q.Get("versionId"), nil
}

// IsCode reports whether err is an S3 API error with one of codes.
func IsCode(err error, codes ...string) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	for _, c := range codes {
		if ae.ErrorCode() == c {
			return true
		}
	}
	return false
}

// MayHeal reports whether an S3 error code names a failure that may heal
// when the same request is made again: throttling, a timeout, a server
// error, or a conditional write that met another one in progress (409
// ConditionalRequestConflict, which S3's documentation says to retry).
func MayHeal(code string) bool {
	switch code {
	case "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "ConditionalRequestConflict":
		return true
	}
	return false
}

// Status is an S3 failure's HTTP status and API error code, each zero when
// err does not carry it (no answer at all: both zero).
func Status(err error) (status int, code string) {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// SplitList is a comma-separated setting's items; "*" and empty items are
// dropped (an empty list allows anything).
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && f != "*" {
			out = append(out, f)
		}
	}
	return out
}

// Allowed reports whether s3://bucket/key lies inside one of the "bucket"
// or "bucket/prefix" patterns (any, when there are none).
func Allowed(patterns []string, bucket, key string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		b, prefix, _ := strings.Cut(p, "/")
		if b == bucket && strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// KeySegment is name made safe as one segment of a key (an execution's
// work folder): letters, digits, '-', '_' and '.' kept, anything else '_'.
func KeySegment(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
}
