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

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/stepfn"
)

// S3 is what the adapter needs of S3, with the identity of the state
// machine's role.
type S3 interface {
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// ReadItems is the ItemReader: arn:aws:states:::s3:getObject of a JSONL or
// JSON-array object, with the resolved ReaderConfig and Parameters.
func ReadItems(ctx context.Context, c S3, body []byte) (any, error) {
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
// FAILED_n.json and manifest.json, in stepfn's layout.
func WriteResults(ctx context.Context, c S3, body []byte) (any, error) {
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
	d, err := stepfn.WriteResults(ctx, stepfn.Put(c), stepfn.ResultLocation{Bucket: in.Parameters.Bucket, Prefix: in.Parameters.Prefix, MapRunArn: in.MapRunArn}, in.Succeeded, in.Failed)
	if err != nil {
		return nil, err
	}
	return *d, nil
}
