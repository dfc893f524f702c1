package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The Distributed Map's ResultWriter writes a manifest and result files; the
// finalizer reads the workers' outputs from them. The local runner writes
// the same layout, so the finalizer reads one format.

// MapResults is the Map state's output at $.results.
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

// maxResultFileBytes bounds one result file.
const maxResultFileBytes = 1 << 30

// readMapResults collects the part results of every succeeded batch, with
// the CRC-32s each batch wrote to the job's work prefix.
func readMapResults(ctx context.Context, c objectGetter, job *Job, d *ResultWriterDetails) ([]PartResult, error) {
	var parts []PartResult
	err := eachMapOutput(ctx, c, d, func(output []byte) error {
		var out BatchResult
		if err := json.Unmarshal(output, &out); err != nil {
			return fmt.Errorf("worker output: %w", err)
		}
		if out.CRCsKey != "" {
			if err := readBatchCRCs(ctx, c, job, &out); err != nil {
				return err
			}
		}
		parts = append(parts, out.Parts...)
		return nil
	})
	return parts, err
}

// readBatchCRCs sets the parts' CRCs from the object a batch wrote them to;
// only an object of this execution's work prefix is read.
func readBatchCRCs(ctx context.Context, c objectGetter, job *Job, out *BatchResult) error {
	if !strings.HasPrefix(out.CRCsKey, job.WorkPrefix) || job.WorkPrefix == "" {
		return fmt.Errorf("worker output: its CRC-32s s3://%s/%s are outside this execution's work prefix %s", job.WorkBucket, out.CRCsKey, job.WorkPrefix)
	}
	doc, err := getBytes(ctx, c, job.WorkBucket, out.CRCsKey, maxResultFileBytes)
	if err != nil {
		return fmt.Errorf("worker output's CRC-32s: %w", err)
	}
	var crcs batchCRCs
	if err := json.Unmarshal(doc, &crcs); err != nil {
		return fmt.Errorf("worker output's CRC-32s s3://%s/%s: %w", job.WorkBucket, out.CRCsKey, err)
	}
	for i := range out.Parts {
		out.Parts[i].CRCs = crcs.Parts[out.Parts[i].Part]
	}
	return nil
}

// ErrMapIncomplete is wrapped by EachMapOutput's error when a child
// execution failed or is pending: the run's results are not all there.
var ErrMapIncomplete = errors.New("a batch did not succeed")

// EachMapOutput calls fn with the output of every child execution of a Map
// run, from its ResultWriter manifest; a failed or pending child is an error
// wrapping ErrMapIncomplete. The create and extract finalizers both read
// their workers' results with it.
func EachMapOutput(ctx context.Context, c objectGetter, d *ResultWriterDetails, fn func(output []byte) error) error {
	return eachMapOutput(ctx, c, d, fn)
}

func eachMapOutput(ctx context.Context, c objectGetter, d *ResultWriterDetails, fn func(output []byte) error) error {
	doc, err := getBytes(ctx, c, d.Bucket, d.Key, 64<<20)
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
		doc, err := getBytes(ctx, c, bucket, f.Key, maxResultFileBytes)
		if err != nil {
			return fmt.Errorf("map result file: %w", err)
		}
		var children []ChildResult
		if err := json.Unmarshal(doc, &children); err != nil {
			return fmt.Errorf("map result file s3://%s/%s: %w", bucket, f.Key, err)
		}
		for _, ch := range children {
			if ch.Status != "SUCCEEDED" {
				return fmt.Errorf("map result file s3://%s/%s: a batch has status %s (%s: %s): %w", bucket, f.Key, ch.Status, ch.Error, ch.Cause, ErrMapIncomplete)
			}
			if err := fn([]byte(ch.Output)); err != nil {
				return fmt.Errorf("map result file s3://%s/%s: %w", bucket, f.Key, err)
			}
		}
	}
	return nil
}

// FirstFailedBatch reads the first failed child execution's error from the
// ResultWriter's FAILED_*.json files under prefix: a failed Distributed Map
// reports only that too many batches failed (States.*), the batches' own
// errors are in its results. The create and extract aborts both use it.
func FirstFailedBatch(ctx context.Context, c interface {
	objectLister
	objectGetter
}, bucket, prefix string) (errorType, cause string, ok bool) {
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
			doc, err := getBytes(ctx, c, bucket, key, 64<<20)
			if err != nil {
				continue
			}
			var children []ChildResult
			if json.Unmarshal(doc, &children) != nil {
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
