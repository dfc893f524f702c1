package workflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/manifest"
	"github.com/s3zip/s3zip/plan"
)

// pinManifest looks every manifest object up: to pin it (ETag), to date it,
// to check the size and CRC the manifest gives, and to learn its CRC.
// A line's problem is recorded, not returned, so that one run lists
// every missing object and wrong size, in line order.
func (pl *Planner) pinManifest(ctx context.Context, cfg Config, entries []plan.Entry, lines []manifest.Line) error {
	problems := make(manifestProblems, len(entries))
	err := forEach(ctx, cfg.HeadConcurrency, len(entries), func(ctx context.Context, i int) error {
		e := &entries[i]
		in := &s3.HeadObjectInput{Bucket: &e.Source.Bucket, Key: &e.Source.Key, ChecksumMode: types.ChecksumModeEnabled}
		h, err := pl.S3.HeadObject(ctx, in)
		if err != nil {
			if s3x.NotFound(err) {
				problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s does not exist", lines[i].LineNum, e.Source.Bucket, e.Source.Key)
				return nil
			}
			return s3Error("HeadObject", e.Source.Bucket, e.Source.Key, true, err)
		}
		// The ETag the manifest gives is compared here rather than sent as
		// If-Match, whose failure would read as the source changing mid-run.
		if e.Source.ETag != "" && !sameETag(e.Source.ETag, aws.ToString(h.ETag)) {
			problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s has ETag %s, the manifest says %s (the object is not the one the manifest describes)", lines[i].LineNum, e.Source.Bucket, e.Source.Key, aws.ToString(h.ETag), e.Source.ETag)
			return nil
		}
		size := aws.ToInt64(h.ContentLength)
		if e.Size >= 0 && e.Size != size {
			problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s is %d bytes, the manifest says %d", lines[i].LineNum, e.Source.Bucket, e.Source.Key, size, e.Size)
			return nil
		}
		e.Size, e.Source.ETag, e.ModTime = size, aws.ToString(h.ETag), aws.ToTime(h.LastModified)
		e.Source.VersionID = aws.ToString(h.VersionId)
		if crc, ok := fullObjectCRC(h); ok {
			if e.CRC32.Known && e.CRC32.Sum != crc {
				problems[i] = fmt.Sprintf("manifest line %d: s3://%s/%s has CRC-32 %08x, the manifest says %08x", lines[i].LineNum, e.Source.Bucket, e.Source.Key, crc, e.CRC32.Sum)
				return nil
			}
			e.CRC32 = plan.KnownCRC(crc)
		}
		e.Dir = strings.HasSuffix(e.Name, "/") && size == 0
		return nil
	})
	if err != nil {
		return err
	}
	return problems.err()
}
