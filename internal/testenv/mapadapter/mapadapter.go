// Package mapadapter is the S3 side of the local Distributed Map adapter
// (tests/asl/README.md): what a Map Run's ItemReader reads and its
// ResultWriter writes, with the S3 client (and so the identity) the caller
// gives it — the state machine's role in tests/deployed.
package mapadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/workflow"
)

// ReadItems is the ItemReader: arn:aws:states:::s3:getObject of a JSONL or
// JSON-array object, with the resolved ReaderConfig and Parameters.
func ReadItems(ctx context.Context, c workflow.S3, body []byte) (any, error) {
	var in struct {
		Resource     string
		ReaderConfig struct{ InputType string }
		Parameters   struct{ Bucket, Key string }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if in.Resource != "arn:aws:states:::s3:getObject" {
		return nil, fmt.Errorf("ItemReader resource %q: the adapter reads only arn:aws:states:::s3:getObject", in.Resource)
	}
	obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &in.Parameters.Bucket, Key: &in.Parameters.Key})
	if err != nil {
		return nil, fmt.Errorf("ItemReader s3://%s/%s: %w", in.Parameters.Bucket, in.Parameters.Key, err)
	}
	defer obj.Body.Close()
	doc, err := io.ReadAll(obj.Body)
	if err != nil {
		return nil, err
	}
	items := []json.RawMessage{}
	switch in.ReaderConfig.InputType {
	case "JSONL":
		for i, line := range bytes.Split(doc, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if !json.Valid(line) {
				return nil, fmt.Errorf("ItemReader s3://%s/%s line %d is not JSON", in.Parameters.Bucket, in.Parameters.Key, i+1)
			}
			items = append(items, json.RawMessage(line))
		}
	case "JSON", "":
		if err := json.Unmarshal(doc, &items); err != nil {
			return nil, fmt.Errorf("ItemReader s3://%s/%s: %w", in.Parameters.Bucket, in.Parameters.Key, err)
		}
	default:
		return nil, fmt.Errorf("ItemReader InputType %q: the adapter reads JSON and JSONL", in.ReaderConfig.InputType)
	}
	return map[string]any{"Items": items}, nil
}

// WriteResults is the ResultWriter: <Prefix>/<map run id>/SUCCEEDED_n.json,
// FAILED_n.json and manifest.json (the layout workflow.ResultManifest reads).
func WriteResults(ctx context.Context, c workflow.S3, body []byte) (any, error) {
	var in struct {
		Resource          string
		Parameters        struct{ Bucket, Prefix string }
		MapRunArn         string
		Succeeded, Failed []json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	if in.Resource != "arn:aws:states:::s3:putObject" {
		return nil, fmt.Errorf("ResultWriter resource %q: the adapter writes only arn:aws:states:::s3:putObject", in.Resource)
	}
	bucket := in.Parameters.Bucket
	prefix := ""
	if in.Parameters.Prefix != "" {
		prefix = strings.TrimSuffix(in.Parameters.Prefix, "/") + "/"
	}
	run := in.MapRunArn[strings.LastIndex(in.MapRunArn, ":")+1:]
	prefix += run + "/"
	put := func(key string, v any) (int64, error) {
		doc, err := json.Marshal(v)
		if err != nil {
			return 0, err
		}
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc)))})
		if err != nil {
			return 0, fmt.Errorf("ResultWriter s3://%s/%s: %w", bucket, key, err)
		}
		return int64(len(doc)), nil
	}
	var m workflow.ResultManifest
	m.DestinationBucket, m.MapRunArn = bucket, in.MapRunArn
	m.ResultFiles.Succeeded, m.ResultFiles.Failed, m.ResultFiles.Pending = []workflow.ResultFile{}, []workflow.ResultFile{}, []workflow.ResultFile{}
	const perFile = 1000
	for _, set := range []struct {
		status  string
		records []json.RawMessage
		files   *[]workflow.ResultFile
	}{{"SUCCEEDED", in.Succeeded, &m.ResultFiles.Succeeded}, {"FAILED", in.Failed, &m.ResultFiles.Failed}} {
		for i := 0; i < len(set.records); i += perFile {
			key := fmt.Sprintf("%s%s_%d.json", prefix, set.status, i/perFile)
			size, err := put(key, set.records[i:min(i+perFile, len(set.records))])
			if err != nil {
				return nil, err
			}
			*set.files = append(*set.files, workflow.ResultFile{Key: key, Size: size})
		}
	}
	if _, err := put(prefix+"manifest.json", m); err != nil {
		return nil, err
	}
	return workflow.ResultWriterDetails{Bucket: bucket, Key: prefix + "manifest.json"}, nil
}
