package s3part

import (
	"errors"
	"net/url"
	"strings"
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
