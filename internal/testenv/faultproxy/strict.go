package faultproxy

import (
	"fmt"
	"net/http"

	"github.com/s3zip/s3zip/internal/s3part"
)

// MinRangedCopySource is the size a source must exceed for UploadPartCopy to
// copy a byte range of it: "You can copy a range only if the source object
// is greater than 5 MB" (S3 API reference, UploadPartCopy,
// x-amz-copy-source-range). versitygw copies any range of any source.
const MinRangedCopySource = s3part.MinPartSize

// strict answers, instead of the server, a request that S3 refuses and
// versitygw would carry out; ok=false lets the request through. It needs
// Config.SourceSize.
func (p *Proxy) strict(op Op, r *http.Request) (refusal string, ok bool) {
	rng := r.Header.Get("X-Amz-Copy-Source-Range")
	if p.cfg.SourceSize == nil || op != UploadPartCopy || rng == "" {
		return "", false
	}
	bucket, key, version, err := s3part.ParseCopySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return fmt.Sprintf("x-amz-copy-source %q: %v", r.Header.Get("X-Amz-Copy-Source"), err), true
	}
	size, err := p.cfg.SourceSize(bucket, key, version)
	if err != nil || size > MinRangedCopySource {
		return "", false // the server answers for a source it cannot find
	}
	return fmt.Sprintf("%s of s3://%s/%s, a source of %d bytes (S3 copies a byte range only of a source larger than 5 MB)", rng, bucket, key, size), true
}

// StrictRefusals lists the requests the proxy refused as S3 would (Config.SourceSize).
func (p *Proxy) StrictRefusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}
