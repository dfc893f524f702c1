package extract

// Small S3 helpers of the extract handlers, for work objects, listing and errors.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3doc"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/zipread"
)

// Client is the part of the S3 API an extraction uses; *s3.Client has it.
type Client interface {
	zipread.Client
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
}

func classifyS3(err error) error {
	if err != nil && s3err.Transient(err) {
		return &stepfn.TransientError{Err: err}
	}
	return err
}

// named names a failed S3 call for the extract state machine, as
// s3prefix.Under's ErrorNamer, typed stepfn.TransientError when a retry may help.
func named(op, bucket, key string, err error) error {
	return classifyS3(fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err))
}

// under is a prefix of a bucket, its failures named for extract.
func under(bucket, prefix string) s3prefix.Under {
	return s3prefix.Under{Bucket: bucket, Prefix: prefix, Named: named}
}

// putWork writes a work object with its CRC-32 through s3doc.Put.
func putWork(ctx context.Context, c Client, bucket, key string, doc []byte) error {
	if err := s3doc.Put(ctx, c, bucket, key, doc); err != nil {
		return classifyS3(fmt.Errorf("put work object s3://%s/%s: %w", bucket, key, err))
	}
	return nil
}

// maxWorkObject bounds a work object read whole.
const maxWorkObject = 1 << 30

func getWork(ctx context.Context, c Client, bucket, key string) ([]byte, error) {
	return getWorkUpTo(ctx, c, bucket, key, maxWorkObject)
}

// openWork opens a work object for reading, naming it in its error. A
// body cut short resumes through s3rate.Resume, and a read that still
// fails is classified as S3's failures are.
func openWork(ctx context.Context, c Client, bucket, key string) (io.ReadCloser, error) {
	body, err := s3doc.Open(ctx, c, bucket, key, 0)
	if err != nil {
		if s3err.NotFound(err) {
			return nil, fmt.Errorf("work object s3://%s/%s: %w", bucket, key, err)
		}
		return nil, classifyS3(fmt.Errorf("get work object s3://%s/%s: %w", bucket, key, err))
	}
	return &workBody{ReadCloser: body, where: "s3://" + bucket + "/" + key}, nil
}

// workBody is a work object's body whose failed reads are named and typed.
type workBody struct {
	io.ReadCloser
	where string
}

func (b *workBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = classifyS3(fmt.Errorf("read work object %s: %w", b.where, err))
	}
	return n, err
}

// getWorkUpTo reads a work object whole, refusing one over limit bytes.
func getWorkUpTo(ctx context.Context, c Client, bucket, key string, limit int64) ([]byte, error) {
	body, err := openWork(ctx, c, bucket, key)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return s3doc.ReadAll(body, bucket, key, limit) // openWork's body names and classifies a read's error
}

// workGetter and workPutter read and write work objects for internal/stepfn,
// which leaves naming S3's failures to extract's classifyS3.
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

// readPlanned reads what the jobs write a line at a time, keeping only
// keys and Content-Types. The jobs of a million entries are some hundreds
// of MB of JSON, and their Items several times that decoded.
func readPlanned(ctx context.Context, c Client, ex *Extraction) (*planned, error) {
	p := &planned{types: map[string]int{}}
	err := eachPlanned(ctx, c, ex, func(it plannedItem) {
		p.keys = append(p.keys, it.Key)
		p.types[it.ContentType]++
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(p.keys)
	return p, nil
}

// plannedItem is what the finalizer and Abort need of a job's item.
type plannedItem struct {
	Key         string `json:"key"`
	ContentType string `json:"contentType"`
	Replaces    bool   `json:"replaces"`
}

// eachPlanned calls fn with every item of the jobs, read a line at a time.
func eachPlanned(ctx context.Context, c Client, ex *Extraction, fn func(plannedItem)) error {
	return eachJob(ctx, c, ex, func(j *struct {
		Items []plannedItem `json:"items"`
	}) {
		for _, it := range j.Items {
			fn(it)
		}
	})
}

// readJobs reads the planned jobs from their JSONL object.
func readJobs(ctx context.Context, c Client, ex *Extraction) ([]Job, error) {
	var jobs []Job
	err := eachJob(ctx, c, ex, func(j *Job) { jobs = append(jobs, *j) })
	return jobs, err
}

// eachJob decodes the JSONL jobs a line at a time for fn, each into a T,
// a Job or only what the caller needs of one.
func eachJob[T any](ctx context.Context, c Client, ex *Extraction, fn func(*T)) error {
	where := "s3://" + ex.WorkBucket + "/" + ex.JobsKey
	body, err := openWork(ctx, c, ex.WorkBucket, ex.JobsKey)
	if err != nil {
		return err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var j T
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return fmt.Errorf("jobs %s line %d: %w", where, line, err)
		}
		fn(&j)
	}
	if err := sc.Err(); err != nil {
		return classifyS3(fmt.Errorf("read work object %s: %w", where, err))
	}
	return nil
}

func logf(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
