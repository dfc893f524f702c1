package create

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// What a HeadObject says of an object's mode, time and metadata, as its
// entry records them: s3fs's and rclone's encodings, with and without keeping
// metadata.
func TestMetaOf(t *testing.T) {
	var listed time.Time // none in the metadata: Last-Modified stands
	src := plan.Source{Bucket: "b", Key: "k"}
	for _, c := range []struct {
		name     string
		head     s3.HeadObjectOutput
		keep     bool
		mode     uint32
		modTime  time.Time
		wantMeta *zipformat.Metadata
	}{
		{name: "plain", head: s3.HeadObjectOutput{ContentType: aws.String("binary/octet-stream")}, modTime: listed},
		{name: "s3fs", head: s3.HeadObjectOutput{Metadata: map[string]string{"mode": "33261", "mtime": "1700000000", "uid": "0", "gid": "0"}},
			mode: 0o755, modTime: time.Unix(1700000000, 0).UTC()},
		{name: "rclone", head: s3.HeadObjectOutput{Metadata: map[string]string{"mtime": "1614523456.123456789"}},
			modTime: time.Unix(1614523456, 123456789).UTC()},
		{name: "kept", keep: true,
			head: s3.HeadObjectOutput{ContentType: aws.String("text/html"), ContentEncoding: aws.String("gzip"), CacheControl: aws.String("no-cache"),
				Metadata: map[string]string{"mode": "100640", "owner": "ops"}},
			mode: 0o640, modTime: listed,
			wantMeta: &zipformat.Metadata{ContentType: "text/html", ContentEncoding: "gzip", CacheControl: "no-cache", User: map[string]string{"mode": "100640", "owner": "ops"}}},
		{name: "kept-nothing-but-type", keep: true, head: s3.HeadObjectOutput{ContentType: aws.String("image/png"), Metadata: map[string]string{}},
			modTime: listed, wantMeta: &zipformat.Metadata{ContentType: "image/png"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := metaOf(&c.head, src, c.keep)
			if err != nil {
				t.Fatal(err)
			}
			if m.Mode != c.mode || !m.ModTime.Equal(c.modTime) {
				t.Errorf("mode %#o, time %v; want %#o, %v", m.Mode, m.ModTime, c.mode, c.modTime)
			}
			if (m.Field != "") != (c.wantMeta != nil) {
				t.Fatalf("meta field %x, want %+v", m.Field, c.wantMeta)
			}
			if c.wantMeta != nil {
				got, err := zipformat.ParseMetadataExtra([]byte(m.Field[4:]))
				if err != nil || !reflect.DeepEqual(got, c.wantMeta) {
					t.Errorf("meta field reads %+v, %v; want %+v", got, err, c.wantMeta)
				}
			}
		})
	}
	huge := &s3.HeadObjectOutput{Metadata: map[string]string{"a": strings.Repeat("x", 40000), "b": strings.Repeat("y", 30000)}}
	_, err := metaOf(huge, src, true)
	var re *failure.RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "s3://b/k") || !strings.Contains(err.Error(), "without options.keepMetadata") {
		t.Errorf("metadata past the field's limit: got %v, want a failure.RequestError naming the object and the way out", err)
	}
	if _, err := metaOf(huge, src, false); err != nil {
		t.Errorf("not kept, its size does not matter: %v", err)
	}
}

// A batch of KeptLookupsPerBatch pin answers, each at its longest (a field
// of MaxKeptMetadataBytes, a 1,024-byte version ID), fits the 256 KiB Step
// Functions holds a Map child's result to; one more field byte is refused.
func TestKeptLookupsFitThePayloadQuota(t *testing.T) {
	l := &Looked{Size: 1 << 40, ETag: `"` + strings.Repeat("f", 32) + `-10000"`, VersionID: strings.Repeat("v", 1024),
		ModTime: time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC), CRC32: plan.KnownCRC(0xffffffff), Stored: StoredComposite,
		Mode: 0o7777, Meta: plan.MetaField(strings.Repeat("\xff", MaxKeptMetadataBytes))}
	res := &ReadBatchResult{}
	for i := range KeptLookupsPerBatch {
		res.Results = append(res.Results, ReadResult{Entry: 10_000_000 + i, Object: l})
	}
	if _, err := stepfn.Payload("a kept pin batch's result", res); err != nil {
		t.Fatal(err)
	}
	over := &s3.HeadObjectOutput{Metadata: map[string]string{"k": strings.Repeat("x", MaxKeptMetadataBytes)}}
	var re *failure.RequestError
	if _, err := metaOf(over, plan.Source{Bucket: "b", Key: "k"}, true); !errors.As(err, &re) {
		t.Errorf("a field over MaxKeptMetadataBytes: got %v, want a RequestError", err)
	}
}

// The metadata a run keeps is bounded all objects together: past
// MaxKeptMetadataTotal the pin round's answers are refused with a
// failure.LimitError rather than held until the planner runs out of memory.
func TestKeptMetadataTotalBounded(t *testing.T) {
	field := plan.MetaField(strings.Repeat("m", 8<<20)) // one string shared by every answer: cheap here
	n := int(MaxKeptMetadataTotal/(8<<20)) + 1
	entries := make([]plan.Entry, n)
	jobs := make([]lookupRef, n)
	results := make([]ReadResult, n)
	for i := range entries {
		entries[i] = plan.Entry{Name: fmt.Sprintf("%d", i), Source: plan.Source{Bucket: "b", Key: fmt.Sprintf("%d", i)}, Size: 1}
		jobs[i] = lookupRef{Entry: i}
		results[i] = ReadResult{Entry: i, Object: &Looked{Size: 1, ETag: `"e"`, Meta: field}}
	}
	r := &planRun{req: &Request{Source: Source{Bucket: "b"}}, stored: &storedCRCs{}}
	_, err := r.applyPins(entries, jobs, answersOf(results))
	var le *failure.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "without options.keepMetadata") {
		t.Fatalf("got %v, want a failure.LimitError saying how to get under it", err)
	}
	if _, err := r.applyPins(entries[:n-1], jobs[:n-1], answersOf(results[:n-1])); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
}
