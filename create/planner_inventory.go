package create

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3prefix"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3zip/s3zip/internal/inventory"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// maxProblemsListed bounds the problems one refusal lists. An inventory of
// millions of keys outside the allowed sources needs a few examples, not
// millions of lines.
const maxProblemsListed = 20

// inventoryEntries reads the S3 Inventory report the request names and makes
// its records the entries, with the size, ETag and last-modified time a
// listing would give, and no request per object. The planner reads only the
// manifest, its checksum and the data files, whatever the number of objects.
//
// The report is a day or a week old. The workers' If-Match on the ETag it
// gives catches an object changed since, as failure.SourceChangedError, as a
// listing's would be caught. No version is pinned, for the same reason, so an
// object overwritten since the report is refused, not archived as it was.
func (pl *Planner) inventoryEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy, stored *storedCRCs) ([]plan.Entry, error) {
	ref, prefix := req.Source.Inventory, req.Source.Prefix
	if strings.HasPrefix(prefix, cfg.WorkPrefix) {
		return nil, requestError("source.prefix %q is inside the work prefix %s, which holds s3zip's temporary objects, not data to archive", prefix, cfg.WorkPrefix)
	}
	open := inventoryOpener(pl.S3, ref.Bucket)
	m, err := inventory.ReadManifest(ctx, open, ref.Key)
	if err != nil {
		return nil, inventoryError(ctx, ref, err)
	}
	if req.Source.Bucket != "" && req.Source.Bucket != m.SourceBucket {
		return nil, requestError("source.bucket %q: the inventory s3://%s/%s lists bucket %q; leave source.bucket out or give that bucket", req.Source.Bucket, ref.Bucket, ref.Key, m.SourceBucket)
	}
	var entries []plan.Entry
	var bad []string
	outside, skipped := 0, 0
	_, err = inventory.Read(ctx, open, m, func(r inventory.Record) error {
		key := r.Key
		switch {
		case !strings.HasPrefix(key, prefix):
			return nil
		case key == prefix && strings.HasSuffix(key, "/") && r.Size == 0:
			return nil // the folder marker of the prefix itself names nothing inside it
		case strings.HasPrefix(key, cfg.WorkPrefix):
			skipped++
			return nil
		case !s3prefix.Allowed(cfg.AllowedSources, r.Bucket, key):
			if outside++; outside <= maxProblemsListed {
				bad = append(bad, fmt.Sprintf("inventory s3://%s/%s: s3://%s/%s is outside the sources this deployment allows", ref.Bucket, ref.Key, r.Bucket, key))
			}
			return nil
		}
		if r.ChecksumAlgorithm != "" {
			stored.note(r.Bucket, key, storedKind([]types.ChecksumAlgorithm{types.ChecksumAlgorithm(r.ChecksumAlgorithm)}, ""))
		}
		etag := r.ETag
		if etag != "" {
			etag = `"` + etag + `"` // as S3 gives it in listings and sends it back in If-Match
		}
		entries = append(entries, plan.Entry{
			Name:    plan.NameFor(key, prefix, names),
			Source:  plan.Source{Bucket: r.Bucket, Key: key, ETag: etag},
			Size:    r.Size,
			ModTime: r.LastModified,
			Dir:     strings.HasSuffix(key, "/") && r.Size == 0,
		})
		return nil
	})
	if err != nil {
		return nil, inventoryError(ctx, ref, err)
	}
	if outside > maxProblemsListed {
		bad = append(bad, fmt.Sprintf("… and %d more keys outside the allowed sources", outside-maxProblemsListed))
	}
	if bad != nil {
		return nil, &failure.RequestError{Problems: bad}
	}
	if skipped > 0 {
		logger(pl.Log).Warn("skipped work objects listed in the inventory", "inventory", "s3://"+ref.Bucket+"/"+ref.Key, "workPrefix", cfg.WorkPrefix, "objects", skipped)
	}
	return entries, nil
}

// inventoryOpener reads a report's objects from the bucket its manifest.json
// is in, the inventory's destination bucket. A missing object reads as
// fs.ErrNotExist.
func inventoryOpener(c S3, bucket string) inventory.Opener {
	return inventory.OpenFunc(func(ctx context.Context, key string) (io.ReadCloser, error) {
		in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
		out, err := c.GetObject(ctx, in)
		if err != nil {
			if s3err.NotFound(err) {
				return nil, fmt.Errorf("s3://%s/%s: %w", bucket, key, fs.ErrNotExist)
			}
			return nil, s3Error("GetObject", bucket, key, false, err)
		}
		return resumed(ctx, c, in, out, false), nil
	})
}

// inventoryError turns a report that is missing, corrupt or malformed into a
// request error naming the report. S3's failures stay as they are, so
// transient ones stay retryable.
func inventoryError(ctx context.Context, ref *ObjectRef, err error) error {
	var s3Failure *smithyhttp.ResponseError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return requestError("inventory s3://%s/%s: %v: the report is incomplete or was deleted; give a complete report (S3 writes manifest.checksum last)", ref.Bucket, ref.Key, err)
	case ctx.Err() != nil, errors.As(err, &s3Failure), stepfn.IsA[*stepfn.TransientError](err), stepfn.IsA[*RefusedError](err):
		return err
	}
	// What is left are the inventory package's own errors, such as a
	// ChecksumError, a RowError or a format it cannot read.
	return requestError("inventory s3://%s/%s: %v", ref.Bucket, ref.Key, err)
}
