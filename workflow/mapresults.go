package workflow

import (
	"context"
	"encoding/json"
	"fmt"
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

// readMapResults collects the part results of every succeeded batch.
func readMapResults(ctx context.Context, c objectGetter, d *ResultWriterDetails) ([]PartResult, error) {
	doc, err := getBytes(ctx, c, d.Bucket, d.Key, 64<<20)
	if err != nil {
		return nil, fmt.Errorf("map results manifest: %w", err)
	}
	var m ResultManifest
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("map results manifest s3://%s/%s: %w", d.Bucket, d.Key, err)
	}
	if n := len(m.ResultFiles.Failed) + len(m.ResultFiles.Pending); n > 0 {
		return nil, fmt.Errorf("map results: %d result files of failed or pending batches; the archive cannot be completed", n)
	}
	bucket := m.DestinationBucket
	if bucket == "" {
		bucket = d.Bucket
	}
	var parts []PartResult
	for _, f := range m.ResultFiles.Succeeded {
		doc, err := getBytes(ctx, c, bucket, f.Key, maxResultFileBytes)
		if err != nil {
			return nil, fmt.Errorf("map result file: %w", err)
		}
		var children []ChildResult
		if err := json.Unmarshal(doc, &children); err != nil {
			return nil, fmt.Errorf("map result file s3://%s/%s: %w", bucket, f.Key, err)
		}
		for _, ch := range children {
			if ch.Status != "SUCCEEDED" {
				return nil, fmt.Errorf("map result file s3://%s/%s: a batch has status %s (%s: %s)", bucket, f.Key, ch.Status, ch.Error, ch.Cause)
			}
			var out BatchResult
			if err := json.Unmarshal([]byte(ch.Output), &out); err != nil {
				return nil, fmt.Errorf("map result file s3://%s/%s: worker output: %w", bucket, f.Key, err)
			}
			parts = append(parts, out.Parts...)
		}
	}
	return parts, nil
}
