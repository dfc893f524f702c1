package workflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// The Map states' results are read and written in the ResultWriter's layout
// by internal/stepfn; what is create's own is the worker output in them.

// MapResults is the Map state's output at $.results.
type MapResults = stepfn.MapResults

// readMapResults collects the part results of every succeeded batch, and
// takes the CRC-32s each batch wrote to the job's work prefix into crcs
// (by entry index across the plan).
func readMapResults(ctx context.Context, c objectGetter, job *Job, d *stepfn.ResultWriterDetails, crcs *plan.CRCs) ([]PartResult, error) {
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
		for i := range out.Parts {
			if err := recordCRCs(crcs, &out.Parts[i]); err != nil {
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
	doc, err := getBytes(ctx, c, job.WorkBucket, out.CRCsKey, stepfn.MaxResultFileBytes)
	if err != nil {
		return fmt.Errorf("worker output's CRC-32s: %w", err)
	}
	var crcs batchCRCs
	if err := json.Unmarshal(doc, &crcs); err != nil {
		return fmt.Errorf("worker output's CRC-32s s3://%s/%s: %w", job.WorkBucket, out.CRCsKey, err)
	}
	for i := range out.Parts {
		out.Parts[i].CRCs = crcs.Parts[partKey(out.Parts[i].Archive, out.Parts[i].Part)]
	}
	return nil
}

// eachMapOutput calls fn with every child execution's output of a Map run.
func eachMapOutput(ctx context.Context, c objectGetter, d *stepfn.ResultWriterDetails, fn func(output []byte) error) error {
	return stepfn.EachOutput(ctx, getter(c), d, fn)
}

// getter and putter read and write whole objects for internal/stepfn, which
// leaves naming S3's failures to the workflow (s3Error).
func getter(c objectGetter) stepfn.GetFunc {
	return func(ctx context.Context, bucket, key string, limit int64) ([]byte, error) {
		return getBytes(ctx, c, bucket, key, limit)
	}
}

func putter(c objectPutter) stepfn.PutFunc {
	return func(ctx context.Context, bucket, key string, doc []byte) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))})
		return s3Error("PutObject", bucket, key, false, err)
	}
}
