package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/s3zip/s3zip/internal/stepfn"
)

// FinalizeInput is the Finalize state's payload: the extraction and, when
// the Map ran, where its results are.
type FinalizeInput struct {
	Extraction
	Results *stepfn.MapResults `json:"results,omitempty"`
}

// Summary is the Finalize Lambda's output: small, the objects are in the report.
type Summary struct {
	Archive        string `json:"archive"`
	ETag           string `json:"etag"`
	Entries        int    `json:"entries"`
	Objects        int    `json:"objects"`
	Skipped        int    `json:"skipped"`
	Report         string `json:"report"`
	ExtractedBytes int64  `json:"extractedBytes"`
	CopiedBytes    int64  `json:"copiedBytes"`
	StreamedBytes  int64  `json:"streamedBytes"`
}

// Finalizer is the Finalize state's handler.
type Finalizer struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Finalize returns the summary of Result.
func (f *Finalizer) Finalize(ctx context.Context, in FinalizeInput) (*Summary, error) {
	res, err := f.finalize(ctx, in)
	if err != nil {
		return nil, err
	}
	return &Summary{Archive: res.Archive, ETag: res.ETag, Entries: res.Entries, Objects: len(res.Objects), Skipped: len(res.Skipped),
		Report: res.Report, ExtractedBytes: res.Extracted, CopiedBytes: res.Copied, StreamedBytes: res.Streamed}, nil
}

// finalize gathers the batches' results from S3, checks that every planned
// object was written exactly once, writes the report, aborts uploads left
// by retried batches and deletes the work objects. It may run again after
// a failure (the report it wrote is recognised as its own).
func (f *Finalizer) finalize(ctx context.Context, in FinalizeInput) (*Result, error) {
	ex := &in.Extraction
	jobs, err := readJobs(ctx, f.S3, ex)
	if err != nil {
		return nil, err
	}
	written := []Written{} // the report's "objects": [] when there are none, never null
	var verifyRead int64
	if ex.Jobs > 0 {
		if in.Results == nil || in.Results.ResultWriterDetails == nil {
			return nil, &IncompleteError{fmt.Sprintf("%d jobs were planned but the input has no Map results", ex.Jobs)}
		}
		outs, err := readBatchOutputs(ctx, f.S3, in.Results.ResultWriterDetails)
		if err != nil {
			return nil, err
		}
		for _, o := range outs {
			written = append(written, o.Written...)
			verifyRead += o.VerifyRead
		}
	}
	planned := map[string]bool{}
	for _, j := range jobs {
		for _, it := range j.Items {
			planned[it.Key] = true
		}
	}
	seen := map[string]bool{}
	var problems []string
	for _, w := range written {
		switch {
		case !planned[w.Key]:
			problems = append(problems, fmt.Sprintf("%s was written but not planned", w.Key))
		case seen[w.Key]:
			problems = append(problems, fmt.Sprintf("%s is in the results twice", w.Key))
		}
		seen[w.Key] = true
	}
	for k := range planned {
		if !seen[k] {
			problems = append(problems, fmt.Sprintf("%s was planned but no batch reports writing it", k))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, &IncompleteError{fmt.Sprintf("s3://%s/%s: %d problems with the workers' results: %s", ex.DestBucket, ex.Prefix, len(problems), strings.Join(problems[:min(len(problems), 10)], "; "))}
	}
	sort.Slice(written, func(i, j int) bool { return written[i].Key < written[j].Key })
	var skipped []Skipped
	if ex.SkippedKey != "" {
		doc, err := getWork(ctx, f.S3, ex.WorkBucket, ex.SkippedKey)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(doc, &skipped); err != nil {
			return nil, fmt.Errorf("s3://%s/%s: %w", ex.WorkBucket, ex.SkippedKey, err)
		}
	}
	res := &Result{Archive: fmt.Sprintf("s3://%s/%s", ex.Archive.Bucket, ex.Archive.Key), ETag: ex.Archive.ETag, Entries: ex.Entries,
		Objects: written, Skipped: skipped, Copied: ex.Copied, Streamed: ex.Read, VerifyRead: verifyRead}
	for _, w := range written {
		res.Extracted += w.Size
	}
	x := newExecutor(f.S3, ex)
	if res.Report, err = x.writeReport(ctx, res); err != nil {
		return nil, err
	}
	// A batch that failed and was run again may have left uploads open.
	keys := planned
	keys[ex.reportKey()] = true
	if _, err := sweepUploads(ctx, f.S3, ex, keys); err != nil {
		return nil, err
	}
	if _, err := deleteWork(ctx, f.S3, ex.WorkBucket, ex.WorkPrefix); err != nil {
		return nil, err
	}
	logf(f.Log).Info("extraction done", "execution", ex.Execution, "objects", len(written), "bytes", res.Extracted, "report", res.Report)
	return res, nil
}

// readBatchOutputs reads the batches' outputs from the ResultWriter's manifest.
func readBatchOutputs(ctx context.Context, c Client, d *stepfn.ResultWriterDetails) ([]BatchOutput, error) {
	var outs []BatchOutput
	err := stepfn.EachOutput(ctx, workGetter(c), d, func(output []byte) error {
		var out BatchOutput
		if err := json.Unmarshal(output, &out); err != nil {
			return fmt.Errorf("batch output: %w", err)
		}
		outs = append(outs, out)
		return nil
	})
	if errors.Is(err, stepfn.ErrMapIncomplete) {
		return nil, &IncompleteError{err.Error()}
	}
	return outs, err
}
