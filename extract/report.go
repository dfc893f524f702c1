package extract

// The reporter checks what an extraction wrote against what it planned, and
// writes the report object beside the extracted objects.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"
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
	Streamed  int64     `json:"streamedBytes"` // archive data bytes read by workers
	Copied    int64     `json:"copiedBytes"`   // archive bytes copied server-side
	Extracted int64     `json:"extractedBytes"`
	// VerifyRead is archive bytes read only to check copies, on servers
	// that cannot answer a ranged copy's CRC-32; it is 0 on AWS.
	VerifyRead int64 `json:"verifyReadBytes"`
	// ContentTypes counts the objects written by Content-Type.
	ContentTypes map[string]int `json:"contentTypes"`
	// Writes and WriteSeconds are the Extraction's count of the requests
	// S3 counts against the destination prefix's write rate, and the least
	// time it allows them.
	Writes       int     `json:"writes"`
	WriteSeconds float64 `json:"writeSeconds"`
}

// newResult returns the result of a planned extraction whose jobs wrote
// the objects written, sorted by key, and skipped entries; types counts
// the objects by Content-Type.
func newResult(ex *Extraction, types map[string]int, written []Written, skipped []Skipped, verifyRead int64) *Result {
	res := &Result{Archive: fmt.Sprintf("s3://%s/%s", ex.Archive.Bucket, ex.Archive.Key), ETag: ex.Archive.ETag, Entries: ex.Entries,
		Objects: written, Skipped: skipped, Copied: ex.Copied, Streamed: ex.Read, VerifyRead: verifyRead, ContentTypes: types,
		Writes: ex.Writes, WriteSeconds: ex.WriteSeconds}
	for _, w := range written {
		res.Extracted += w.Size
	}
	return res
}

// planned is what the jobs write, all the finalizer needs of them, their
// keys sorted and how many objects of each Content-Type.
type planned struct {
	keys  []string
	types map[string]int
}

func (p *planned) has(key string) bool {
	_, ok := slices.BinarySearch(p.keys, key)
	return ok
}

// accountFor checks that the workers wrote every planned key exactly once
// and nothing else, both lists sorted. Otherwise nothing is reported as
// extracted.
func accountFor(ex *Extraction, planned []string, written []Written) error {
	var problems []string
	complain := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	n := 0 // problems in all
	i := 0 // next planned key
	for k, w := range written {
		for i < len(planned) && planned[i] < w.Key {
			complain("%s was planned but no batch reports writing it", planned[i])
			i, n = i+1, n+1
		}
		switch {
		case k > 0 && written[k-1].Key == w.Key:
			complain("%s is in the results twice", w.Key)
			n++
		case i == len(planned) || planned[i] != w.Key:
			complain("%s was written but not planned", w.Key)
			n++
		default:
			i++
		}
	}
	for ; i < len(planned); i++ {
		complain("%s was planned but no batch reports writing it", planned[i])
		n++
	}
	if n == 0 {
		return nil
	}
	return &IncompleteError{fmt.Sprintf("s3://%s/%s: %d problems with the workers' results: %s", ex.DestBucket, ex.Prefix, n, strings.Join(problems, "; "))}
}

// report is the report object's content.
type report struct {
	Archive      string         `json:"archive"`
	ETag         string         `json:"etag"`
	ContentTypes map[string]int `json:"contentTypes"`
	Objects      []Written      `json:"objects"`
	Skipped      []Skipped      `json:"skipped,omitempty"`
}

// encodeReport returns the report's JSON as json.MarshalIndent writes it,
// but encoded an object at a time into one buffer sized for it. For a
// million objects MarshalIndent would hold the compact encoding and the
// indented one at once.
func encodeReport(res *Result) []byte {
	head, _ := json.MarshalIndent(report{Archive: res.Archive, ETag: res.ETag, ContentTypes: res.ContentTypes, Skipped: res.Skipped}, "", "  ")
	const slot = "\n  \"objects\": null" // the top-level field with Objects nil, indented
	at := bytes.Index(head, []byte(slot)) + len(slot) - len("null")
	size := len(head) + 8
	for _, o := range res.Objects {
		size += len(o.Key) + 80
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.Write(head[:at])
	if len(res.Objects) == 0 {
		buf.WriteString("[]")
	} else {
		buf.WriteString("[\n")
		for i := range res.Objects {
			o, _ := json.MarshalIndent(&res.Objects[i], "    ", "  ")
			buf.WriteString("    ")
			buf.Write(o)
			if i < len(res.Objects)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString("  ]")
	}
	buf.Write(head[at+len("null"):])
	return buf.Bytes()
}

// writeReport puts the report at the extraction's report key as it puts
// an object, only where the key was free unless it replaces a report there
// when planned. A report this execution put before, when Finalize runs
// again, counts as written. It returns the report's address.
func writeReport(ctx context.Context, c Client, ex *Extraction, res *Result) (string, error) {
	b := encodeReport(res)
	d, key := ex.DestBucket, ex.reportKey()
	in := &s3.PutObjectInput{Bucket: &d, Key: &key, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc32.ChecksumIEEE(b))), ContentType: aws.String("application/json"),
		Metadata: map[string]string{ExecutionMetadata: ex.Execution}}
	if !ex.ReplacesReport {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := c.PutObject(context.WithoutCancel(ctx), in); err != nil {
		if _, ours, herr := owner(ctx, c, d, key, ex.Execution); herr != nil || !ours || !s3err.IsCode(err, "PreconditionFailed") {
			return "", classifyS3(fmt.Errorf("put report s3://%s/%s: %w", d, key, writeRefused(err, d, key, ex.Overwrite)))
		}
	}
	return fmt.Sprintf("s3://%s/%s", d, key), nil
}
