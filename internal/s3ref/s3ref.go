// Package s3ref holds the two small S3 request details the create and
// extract workflows share: how a copy names its source, and how an S3 API
// error is told by its code.
package s3ref

import (
	"errors"
	"net/url"
	"strings"

	"github.com/aws/smithy-go"
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
