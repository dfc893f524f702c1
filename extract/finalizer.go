package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// FinalizeInput is the Finalize state's payload, the extraction and, when
// the Map ran, where its results are.
type FinalizeInput struct {
	Extraction
	Results *stepfn.MapResults `json:"results,omitempty"`
}

// Summary is the Finalize Lambda's output. It stays small, since the objects are in the report.
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
	// ContentTypes counts the objects written by Content-Type, the
	// summaryTypes most common and the rest under OtherTypes; the report
	// counts every one.
	ContentTypes map[string]int `json:"contentTypes"`
}

// summaryTypes is how many Content-Types the Summary names, so that an
// archive whose objects kept thousands of distinct ones does not take the
// output past Step Functions' 256 KiB.
const summaryTypes = 100

// OtherTypes is the key the Summary counts its less common types under.
const OtherTypes = "(other types)"

// mostTypes returns counts with only its most common n types, the rest
// summed under OtherTypes.
func mostTypes(counts map[string]int, n int) map[string]int {
	if len(counts) <= n {
		return counts
	}
	out := make(map[string]int, n+1)
	for i, t := range objmeta.MostFirst(counts) {
		if i < n {
			out[t] = counts[t]
		} else {
			out[OtherTypes] += counts[t]
		}
	}
	return out
}

// Finalizer is the Finalize state's handler.
type Finalizer struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Handle returns the summary of Result.
func (f *Finalizer) Handle(ctx context.Context, in FinalizeInput) (*Summary, error) {
	res, err := f.finalize(ctx, in)
	if err != nil {
		return nil, err
	}
	return &Summary{Archive: res.Archive, ETag: res.ETag, Entries: res.Entries, Objects: len(res.Objects), Skipped: len(res.Skipped),
		Report: res.Report, ExtractedBytes: res.Extracted, CopiedBytes: res.Copied, StreamedBytes: res.Streamed, ContentTypes: mostTypes(res.ContentTypes, summaryTypes)}, nil
}

// finalize gathers the batches' results from S3, checks that every planned
// object was written exactly once, writes the report, aborts uploads left
// by retried batches and deletes the work objects. It may run again after
// a failure, recognising the report it wrote as its own.
func (f *Finalizer) finalize(ctx context.Context, in FinalizeInput) (*Result, error) {
	ex := &in.Extraction
	planned, err := readPlanned(ctx, f.S3, ex)
	if err != nil {
		return nil, err
	}
	written, verifyRead, err := f.written(ctx, in)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(written, func(a, b Written) int { return strings.Compare(a.Key, b.Key) })
	if err := accountFor(ex, planned.keys, written); err != nil {
		return nil, err
	}
	skipped, err := readSkipped(ctx, f.S3, ex)
	if err != nil {
		return nil, err
	}
	res := newResult(ex, planned.types, written, skipped, verifyRead)
	if res.Report, err = writeReport(ctx, f.S3, ex, res); err != nil {
		return nil, err
	}
	// A batch that failed and was run again may have left uploads open.
	report := ex.reportKey()
	if _, err := sweepUploads(ctx, f.S3, ex, func(key string) bool { return key == report || planned.has(key) }); err != nil {
		return nil, err
	}
	if _, err := under(ex.WorkBucket, ex.WorkPrefix).Delete(ctx, f.S3); err != nil {
		return nil, err
	}
	logf(f.Log).Info("extraction done", "execution", ex.Execution, "objects", len(written), "bytes", res.Extracted, "report", res.Report)
	return res, nil
}

// written gathers what the batches wrote and read only to check copies
// from the Map's results, of which there are none when no job was planned.
func (f *Finalizer) written(ctx context.Context, in FinalizeInput) ([]Written, int64, error) {
	written := []Written{} // the report's "objects" is [] when there are none, never null
	var verifyRead int64
	if in.Jobs == 0 {
		return written, 0, nil
	}
	if in.Results == nil || in.Results.ResultWriterDetails == nil {
		return nil, 0, &IncompleteError{fmt.Sprintf("%d jobs were planned but the input has no Map results", in.Jobs)}
	}
	err := eachBatchOutput(ctx, f.S3, in.Results.ResultWriterDetails, func(o *BatchOutput) {
		written = append(written, o.Written...)
		verifyRead += o.VerifyRead
	})
	if err != nil {
		return nil, 0, err
	}
	return written, verifyRead, nil
}

// readSkipped reads the entries the planner left out, if any.
func readSkipped(ctx context.Context, c Client, ex *Extraction) ([]Skipped, error) {
	if ex.SkippedKey == "" {
		return nil, nil
	}
	doc, err := getWork(ctx, c, ex.WorkBucket, ex.SkippedKey)
	if err != nil {
		return nil, err
	}
	var skipped []Skipped
	if err := json.Unmarshal(doc, &skipped); err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", ex.WorkBucket, ex.SkippedKey, err)
	}
	return skipped, nil
}

// eachBatchOutput reads the batches' outputs from the ResultWriter's
// manifest, one at a time.
func eachBatchOutput(ctx context.Context, c Client, d *stepfn.ResultWriterDetails, fn func(*BatchOutput)) error {
	err := stepfn.EachOutput(ctx, workGetter(c), d, func(output []byte) error {
		var out BatchOutput
		if err := json.Unmarshal(output, &out); err != nil {
			return fmt.Errorf("batch output: %w", err)
		}
		fn(&out)
		return nil
	})
	if errors.Is(err, stepfn.ErrMapIncomplete) {
		return &IncompleteError{err.Error()}
	}
	return err
}
