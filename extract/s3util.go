package extract

// Small S3 helpers of the extract handlers: work objects, listing, errors.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/internal/stepfn"
)

func classifyS3(err error) error {
	if err != nil && s3x.Transient(err) {
		return &TransientError{Err: err}
	}
	return err
}

func listKeys(ctx context.Context, c Client, bucket, prefix string) ([]string, error) {
	var keys []string
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix}
	for {
		out, err := c.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, classifyS3(fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err))
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return keys, nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// deleteWork deletes every object under an execution's work prefix and
// says how many there were.
func deleteWork(ctx context.Context, c Client, bucket, prefix string) (int, error) {
	keys, err := listKeys(ctx, c, bucket, prefix)
	if err != nil {
		return 0, err
	}
	for start := 0; start < len(keys); start += 1000 {
		var ids []types.ObjectIdentifier
		for _, k := range keys[start:min(start+1000, len(keys))] {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return 0, classifyS3(fmt.Errorf("delete work objects under s3://%s/%s: %w", bucket, prefix, err))
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return 0, fmt.Errorf("delete work object s3://%s/%s: %s", bucket, aws.ToString(e.Key), aws.ToString(e.Message))
		}
	}
	return len(keys), nil
}

func putWork(ctx context.Context, c Client, bucket, key string, doc []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc))),
		ChecksumCRC32: aws.String(s3x.CRCBase64(crc32.ChecksumIEEE(doc)))})
	if err != nil {
		return classifyS3(fmt.Errorf("put work object s3://%s/%s: %w", bucket, key, err))
	}
	return nil
}

// maxWorkObject bounds a work object read whole.
const maxWorkObject = 1 << 30

func getWork(ctx context.Context, c Client, bucket, key string) ([]byte, error) {
	return getWorkUpTo(ctx, c, bucket, key, maxWorkObject)
}

// getWorkUpTo reads a work object whole, refusing one over limit bytes.
func getWorkUpTo(ctx context.Context, c Client, bucket, key string, limit int64) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if s3x.NotFound(err) {
			return nil, fmt.Errorf("work object s3://%s/%s: %w", bucket, key, err)
		}
		return nil, classifyS3(fmt.Errorf("get work object s3://%s/%s: %w", bucket, key, err))
	}
	defer out.Body.Close()
	doc, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, classifyS3(fmt.Errorf("read work object s3://%s/%s: %w", bucket, key, err))
	}
	if int64(len(doc)) > limit {
		return nil, fmt.Errorf("work object s3://%s/%s is over %d bytes", bucket, key, limit)
	}
	return doc, nil
}

// workGetter and workPutter read and write work objects for internal/stepfn,
// which leaves naming S3's failures to extract (classifyS3).
func workGetter(c Client) stepfn.GetFunc {
	return func(ctx context.Context, bucket, key string, limit int64) ([]byte, error) {
		return getWorkUpTo(ctx, c, bucket, key, limit)
	}
}

func workPutter(c Client) stepfn.PutFunc {
	return func(ctx context.Context, bucket, key string, doc []byte) error {
		return putWork(ctx, c, bucket, key, doc)
	}
}

// readJobs reads the planned jobs (JSONL).
func readJobs(ctx context.Context, c Client, ex *Extraction) ([]Job, error) {
	doc, err := getWork(ctx, c, ex.WorkBucket, ex.JobsKey)
	if err != nil {
		return nil, err
	}
	return decodeJobs(doc, ex.WorkBucket+"/"+ex.JobsKey)
}

func decodeJobs(doc []byte, where string) ([]Job, error) {
	var jobs []Job
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var j Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return nil, fmt.Errorf("jobs s3://%s line %d: %w", where, len(jobs)+1, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, sc.Err()
}

func logf(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
