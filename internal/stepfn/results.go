package stepfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A Distributed Map's ResultWriter writes a manifest and result files
// (<prefix>/<map run id>/manifest.json, SUCCEEDED_n.json, FAILED_n.json);
// the finalizers read their workers' outputs from them and the aborts the
// first failed batch's error. The local runs and the tests' Map adapter
// write the same layout with WriteResults, so there is one format to read.

// MapResults is the Map state's output, at $.results.
type MapResults struct {
	MapRunArn           string               `json:"MapRunArn,omitempty"`
	ResultWriterDetails *ResultWriterDetails `json:"ResultWriterDetails"`
}

// ResultWriterDetails locates the ResultWriter manifest.
type ResultWriterDetails struct {
	Bucket string `json:"Bucket"`
	Key    string `json:"Key"`
}

// ResultManifest is the ResultWriter's manifest.json.
type ResultManifest struct {
	DestinationBucket string `json:"DestinationBucket"`
	MapRunArn         string `json:"MapRunArn"`
	ResultFiles       struct {
		Failed    []ResultFile `json:"FAILED"`
		Pending   []ResultFile `json:"PENDING"`
		Succeeded []ResultFile `json:"SUCCEEDED"`
	} `json:"ResultFiles"`
}

// ResultFile is one file of results.
type ResultFile struct {
	Key  string `json:"Key"`
	Size int64  `json:"Size"`
}

// ChildResult is one child execution's record in a result file.
type ChildResult struct {
	Status string `json:"Status"`
	Output string `json:"Output,omitempty"` // the worker's output, as a JSON string
	Error  string `json:"Error,omitempty"`
	Cause  string `json:"Cause,omitempty"`
}

const (
	// MaxManifestBytes bounds the manifest read whole.
	MaxManifestBytes = 64 << 20
	// MaxResultFileBytes bounds one result file read whole.
	MaxResultFileBytes = 1 << 30
	// resultsPerFile is how many child records one result file holds.
	resultsPerFile = 1000
)

// GetFunc reads an object whole, refusing one over limit bytes. Each
// workflow gives its own, which names S3's failures the way its state
// machine retries them (a TransientError for one that may heal).
type GetFunc func(ctx context.Context, bucket, key string, limit int64) ([]byte, error)

// PutFunc writes an object, naming S3's failures like GetFunc.
type PutFunc func(ctx context.Context, bucket, key string, doc []byte) error

// ObjectPutter is what Put needs of S3.
type ObjectPutter interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// Put is a PutFunc over c that names no S3 failure, only what failed on
// what: the ResultWriter of the tests' Map adapter, which stands for Step
// Functions, not for a workflow's handler.
func Put(c ObjectPutter) PutFunc {
	return func(ctx context.Context, bucket, key string, doc []byte) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))})
		if err != nil {
			return fmt.Errorf("ResultWriter s3://%s/%s: %w", bucket, key, err)
		}
		return nil
	}
}

// ErrMapIncomplete is wrapped by EachOutput's error when a child execution
// failed or is pending: the run's results are not all there.
var ErrMapIncomplete = errors.New("a batch did not succeed")

// EachOutput calls fn with the output of every child execution of a Map run,
// from its ResultWriter manifest; a failed or pending child is an error
// wrapping ErrMapIncomplete.
func EachOutput(ctx context.Context, get GetFunc, d *ResultWriterDetails, fn func(output []byte) error) error {
	if d == nil {
		return fmt.Errorf("map results: no ResultWriterDetails; the Map state's output must be at $.results: %w", ErrMapIncomplete)
	}
	doc, err := get(ctx, d.Bucket, d.Key, MaxManifestBytes)
	if err != nil {
		return fmt.Errorf("map results manifest: %w", err)
	}
	var m ResultManifest
	if err := json.Unmarshal(doc, &m); err != nil {
		return fmt.Errorf("map results manifest s3://%s/%s: %w", d.Bucket, d.Key, err)
	}
	if n := len(m.ResultFiles.Failed) + len(m.ResultFiles.Pending); n > 0 {
		return fmt.Errorf("map results: %d result files of failed or pending batches; the run cannot be completed: %w", n, ErrMapIncomplete)
	}
	bucket := m.DestinationBucket
	if bucket == "" {
		bucket = d.Bucket
	}
	for _, f := range m.ResultFiles.Succeeded {
		doc, err := get(ctx, bucket, f.Key, MaxResultFileBytes)
		if err != nil {
			return fmt.Errorf("map result file: %w", err)
		}
		var children []ChildResult
		if err := json.Unmarshal(doc, &children); err != nil {
			return fmt.Errorf("map result file s3://%s/%s: %w", bucket, f.Key, err)
		}
		for _, ch := range children {
			if ch.Status != StatusSucceeded {
				return fmt.Errorf("map result file s3://%s/%s: a batch has status %s (%s: %s): %w", bucket, f.Key, ch.Status, ch.Error, ch.Cause, ErrMapIncomplete)
			}
			var refusal struct {
				Refused *RefusedBatchError `json:"refused"`
			}
			if json.Unmarshal([]byte(ch.Output), &refusal) == nil && refusal.Refused != nil {
				return refusal.Refused
			}
			if err := fn([]byte(ch.Output)); err != nil {
				return fmt.Errorf("map result file s3://%s/%s: %w", bucket, f.Key, err)
			}
		}
	}
	return nil
}

// ResultLister is what FirstFailedBatch needs of S3.
type ResultLister interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// FirstFailedBatch reads the first failed child execution's error from the
// ResultWriter's FAILED_*.json files under prefix: a failed Distributed Map
// reports only that too many batches failed (States.*), the batches' own
// errors are in its results. It is a best effort for the aborts (which must
// not fail on it): any S3 failure means not found.
func FirstFailedBatch(ctx context.Context, c ResultLister, bucket, prefix string) (errorType, cause string, ok bool) {
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", "", false
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			if !strings.Contains(path.Base(key), "FAILED_") {
				continue
			}
			var children []ChildResult
			if readJSON(ctx, c, bucket, key, &children) != nil {
				continue
			}
			for _, ch := range children {
				if ch.Error != "" {
					return ch.Error, ch.Cause, true
				}
			}
		}
	}
	return "", "", false
}

func readJSON(ctx context.Context, c ResultLister, bucket, key string, v any) error {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	return json.NewDecoder(io.LimitReader(out.Body, MaxManifestBytes)).Decode(v)
}

// ResultLocation is where a Map run's ResultWriter writes: the state's
// ResultWriter Bucket and Prefix, and the run, whose id (the last segment of
// its ARN) names the folder under Prefix.
type ResultLocation struct {
	Bucket, Prefix string
	MapRunArn      string
}

// folder is the run's folder: prefix/<map run id>/.
func (l ResultLocation) folder() string {
	prefix := l.Prefix
	if prefix != "" {
		prefix = strings.TrimSuffix(prefix, "/") + "/"
	}
	return prefix + l.MapRunArn[strings.LastIndex(l.MapRunArn, ":")+1:] + "/"
}

// WriteResults writes records in the ResultWriter's layout in at's folder:
// SUCCEEDED_n.json and FAILED_n.json of at most 1,000 records each, and the
// manifest, whose location it returns.
func WriteResults[R any](ctx context.Context, put PutFunc, at ResultLocation, succeeded, failed []R) (*ResultWriterDetails, error) {
	bucket, prefix := at.Bucket, at.folder()
	write := func(key string, v any) (int64, error) {
		doc, err := json.Marshal(v)
		if err != nil {
			return 0, fmt.Errorf("ResultWriter s3://%s/%s: %w", bucket, key, err)
		}
		return int64(len(doc)), put(ctx, bucket, key, doc)
	}
	var m ResultManifest
	m.DestinationBucket, m.MapRunArn = bucket, at.MapRunArn
	m.ResultFiles.Succeeded, m.ResultFiles.Failed, m.ResultFiles.Pending = []ResultFile{}, []ResultFile{}, []ResultFile{}
	for _, set := range []struct {
		status  string
		records []R
		files   *[]ResultFile
	}{{"SUCCEEDED", succeeded, &m.ResultFiles.Succeeded}, {"FAILED", failed, &m.ResultFiles.Failed}} {
		for i := 0; i < len(set.records); i += resultsPerFile {
			key := fmt.Sprintf("%s%s_%d.json", prefix, set.status, i/resultsPerFile)
			size, err := write(key, set.records[i:min(i+resultsPerFile, len(set.records))])
			if err != nil {
				return nil, err
			}
			*set.files = append(*set.files, ResultFile{Key: key, Size: size})
		}
	}
	if _, err := write(prefix+"manifest.json", m); err != nil {
		return nil, err
	}
	return &ResultWriterDetails{Bucket: bucket, Key: prefix + "manifest.json"}, nil
}

// WriteLocalResults writes a local Map run's children (all succeeded: a
// local run stops at the first failed batch) under prefix, as a run of its
// own, and returns the Map state's output.
func WriteLocalResults(ctx context.Context, put PutFunc, bucket, prefix string, children []ChildResult) (*MapResults, error) {
	run := fmt.Sprintf("local-%d", time.Now().UnixNano())
	d, err := WriteResults[ChildResult](ctx, put, ResultLocation{Bucket: bucket, Prefix: prefix, MapRunArn: run}, children, nil)
	if err != nil {
		return nil, err
	}
	return &MapResults{MapRunArn: run, ResultWriterDetails: d}, nil
}
