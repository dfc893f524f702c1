package extract

// The reporter: what an extraction wrote, checked against what it planned,
// and the report object written beside the extracted objects.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/internal/s3x"
)

// Written is one object an extraction wrote.
type Written struct {
	Key   string `json:"key"`
	Size  int64  `json:"size"`
	CRC32 string `json:"crc32"` // 8 hex digits
}

// Result is what an extraction did.
type Result struct {
	Archive   string    `json:"archive"`
	ETag      string    `json:"etag"`
	Entries   int       `json:"entries"` // in the central directory
	Plan      *Plan     `json:"-"`
	Objects   []Written `json:"objects"`
	Skipped   []Skipped `json:"skipped,omitempty"`
	Report    string    `json:"report"`
	Streamed  int64     `json:"streamedBytes"` // archive bytes read by workers (data only)
	Copied    int64     `json:"copiedBytes"`   // archive bytes copied server-side
	Extracted int64     `json:"extractedBytes"`
	// VerifyRead is archive bytes read only to check copies, on servers
	// that cannot answer a ranged copy's CRC-32 (0 on AWS).
	VerifyRead int64 `json:"verifyReadBytes"`
	// ContentTypes counts the objects written by Content-Type.
	ContentTypes map[string]int `json:"contentTypes"`
}

// newResult is the result of a planned extraction whose jobs wrote their
// objects (written, sorted by key) and skipped entries.
func newResult(ex *Extraction, jobs []Job, written []Written, skipped []Skipped, verifyRead int64) *Result {
	res := &Result{Archive: fmt.Sprintf("s3://%s/%s", ex.Archive.Bucket, ex.Archive.Key), ETag: ex.Archive.ETag, Entries: ex.Entries,
		Objects: written, Skipped: skipped, Copied: ex.Copied, Streamed: ex.Read, VerifyRead: verifyRead, ContentTypes: map[string]int{}}
	for _, j := range jobs {
		for _, it := range j.Items {
			res.ContentTypes[it.ContentType]++
		}
	}
	for _, w := range written {
		res.Extracted += w.Size
	}
	return res
}

// plannedKeys is the keys the jobs write.
func plannedKeys(jobs []Job) map[string]bool {
	planned := map[string]bool{}
	for _, j := range jobs {
		for _, it := range j.Items {
			planned[it.Key] = true
		}
	}
	return planned
}

// accountFor checks that the workers wrote every planned key exactly once
// and nothing else; nothing is reported as extracted otherwise.
func accountFor(ex *Extraction, planned map[string]bool, written []Written) error {
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
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return &IncompleteError{fmt.Sprintf("s3://%s/%s: %d problems with the workers' results: %s", ex.DestBucket, ex.Prefix, len(problems), strings.Join(problems[:min(len(problems), 10)], "; "))}
}

// report is the report object's content.
type report struct {
	Archive      string         `json:"archive"`
	ETag         string         `json:"etag"`
	ContentTypes map[string]int `json:"contentTypes"`
	Objects      []Written      `json:"objects"`
	Skipped      []Skipped      `json:"skipped,omitempty"`
}

// writeReport puts the report at the extraction's report key, as it puts
// an object: only where the key was free unless it replaces a report there
// when planned; a report this execution put before (a Finalize run again)
// counts as written. It returns the report's address.
func writeReport(ctx context.Context, c Client, ex *Extraction, res *Result) (string, error) {
	b, _ := json.MarshalIndent(report{Archive: res.Archive, ETag: res.ETag, ContentTypes: res.ContentTypes, Objects: res.Objects, Skipped: res.Skipped}, "", "  ")
	d, key := ex.DestBucket, ex.reportKey()
	in := &s3.PutObjectInput{Bucket: &d, Key: &key, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
		ChecksumCRC32: aws.String(s3x.CRCBase64(crc32.ChecksumIEEE(b))), ContentType: aws.String("application/json"),
		Metadata: map[string]string{ExecutionMetadata: ex.Execution}}
	if !ex.ReplacesReport {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := c.PutObject(context.WithoutCancel(ctx), in); err != nil {
		if _, ours, herr := owner(ctx, c, d, key, ex.Execution); herr != nil || !ours || !s3ref.IsCode(err, "PreconditionFailed") {
			return "", classifyS3(fmt.Errorf("put report s3://%s/%s: %w", d, key, writeRefused(err, d, key, ex.Overwrite)))
		}
	}
	return fmt.Sprintf("s3://%s/%s", d, key), nil
}
