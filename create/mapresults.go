package create

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// internal/stepfn reads and writes the Map states' results in the
// ResultWriter's layout, and create reads the worker output in them.

// MapResults is the Map state's output at $.results.
type MapResults = stepfn.MapResults

// readMapResults collects the part results of every succeeded batch and
// takes into crcs, by entry index across the plan, the CRC-32s each batch
// wrote to an object in the job's work prefix. The objects are opened
// plan.ResultReadsInFlight at a time, since opened one after another a run
// of hundreds of batches waited seconds for their first bytes, and are
// decoded into crcs one at a time.
func readMapResults(ctx context.Context, c S3, job *Job, d *stepfn.ResultWriterDetails, crcs *plan.CRCs) ([]PartResult, error) {
	var outs []BatchResult
	err := eachMapOutput(ctx, c, d, func(output []byte) error {
		var out BatchResult
		if err := json.Unmarshal(output, &out); err != nil {
			return fmt.Errorf("worker output: %w", err)
		}
		outs = append(outs, out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	into := &crcSink{crcs: crcs}
	err = forEach(ctx, plan.ResultReadsInFlight, len(outs), func(ctx context.Context, i int) error {
		if outs[i].CRCsKey == "" {
			return nil
		}
		return readBatchCRCs(ctx, c, job, &outs[i], into)
	})
	if err != nil {
		return nil, err
	}
	var parts []PartResult
	for _, out := range outs {
		parts = append(parts, out.Parts...)
	}
	return parts, nil
}

// readBatchCRCs takes the CRC-32s of the batch's parts from the batchCRCs
// object the batch wrote them to into crcs as it reads them. A batch of
// small entries writes tens of MB, which decoded whole into maps of strings
// would be most of the finalizer's memory. Only an object of this
// execution's work prefix is read. Objects are opened side by side, and
// decoded into the sink one at a time.
func readBatchCRCs(ctx context.Context, c S3, job *Job, out *BatchResult, into *crcSink) error {
	if !strings.HasPrefix(out.CRCsKey, job.WorkPrefix) || job.WorkPrefix == "" {
		return fmt.Errorf("worker output: its CRC-32s s3://%s/%s are outside this execution's work prefix %s", job.WorkBucket, out.CRCsKey, job.WorkPrefix)
	}
	body, err := openObject(ctx, c, job.WorkBucket, out.CRCsKey)
	if err != nil {
		return fmt.Errorf("worker output's CRC-32s: %w", err)
	}
	defer body.Close()
	into.mu.Lock()
	defer into.mu.Unlock()
	batch := make(map[string]int, len(out.Parts)) // the batch's parts' numbers by partKey
	for _, r := range out.Parts {
		batch[partKey(r.Archive, r.Part)] = r.Part
	}
	dec := json.NewDecoder(io.LimitReader(body, stepfn.MaxResultFileBytes))
	err = eachMember(dec, func(field string) error {
		if field != "parts" {
			var skip json.RawMessage
			return dec.Decode(&skip)
		}
		return eachMember(dec, func(key string) error {
			part, ok := batch[key]
			return eachMember(dec, func(entry string) error {
				var crc string
				if err := dec.Decode(&crc); err != nil || !ok {
					return err // a part not among the batch's is not taken
				}
				return recordCRC(into.crcs, part, entry, crc)
			})
		})
	})
	if err != nil {
		return fmt.Errorf("worker output's CRC-32s s3://%s/%s: %w", job.WorkBucket, out.CRCsKey, err)
	}
	return nil
}

// crcSink is where the batches' CRC-32s go, one batch's object at a time.
type crcSink struct {
	mu   sync.Mutex
	crcs *plan.CRCs
}

// eachMember calls fn with the name of each member of the JSON object dec
// is at, and fn reads the member's value.
func eachMember(dec *json.Decoder, fn func(name string) error) error {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("want a JSON object (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if err := fn(t.(string)); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return err
}

// eachMapOutput calls fn with every child execution's output of a Map run.
func eachMapOutput(ctx context.Context, c S3, d *stepfn.ResultWriterDetails, fn func(output []byte) error) error {
	return stepfn.EachOutput(ctx, getter(c), d, fn)
}

// getter and putter read and write whole objects for internal/stepfn, which
// leaves naming S3's failures to the workflow's s3Error.
func getter(c S3) stepfn.GetFunc {
	return func(ctx context.Context, bucket, key string, limit int64) ([]byte, error) {
		return getBytes(ctx, c, bucket, key, limit)
	}
}

func putter(c S3) stepfn.PutFunc {
	return func(ctx context.Context, bucket, key string, doc []byte) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))})
		return s3Error("PutObject", bucket, key, false, err)
	}
}
