// Command start starts an s3zip archive from a Go application: by
// StartExecution, or by a request dropped under requests/ in the control
// bucket; run as the completion rule's Lambda target ("ended"), it reads the
// execution's output (docs/output.md). Names come from the environment: the
// stack's outputs StateMachineArn and ControlBucketName, and your buckets.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// Output is what this program reads of the execution's output, version 1.
type Output struct {
	Version   int    `json:"version"`
	RequestID string `json:"requestId"`
	Archive   struct {
		URI   string `json:"uri"`
		Size  int64  `json:"size"`
		CRC32 string `json:"crc32"`
	} `json:"archive"`
	Report  string `json:"report"`
	Entries int    `json:"entries"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ended" { // deployed as the completion rule's Lambda target
		lambda.Start(archiveEnded)
		return
	}
	if err := start(context.Background(), newRequest("order-42", os.Getenv("SOURCE_BUCKET"), os.Getenv("DESTINATION_BUCKET"))); err != nil {
		log.Fatal(err)
	}
}

// newRequest is the execution's input (docs/contract.md, "Request").
func newRequest(id, sourceBucket, destinationBucket string) string {
	doc, _ := json.Marshal(map[string]any{
		"id":          id,
		"source":      map[string]string{"bucket": sourceBucket, "prefix": "2024/"},
		"destination": map[string]string{"bucket": destinationBucket, "key": "zips/photos-2024.zip"},
		"options":     map[string]string{"strategy": "auto"},
	})
	return string(doc)
}

// start starts an execution, or drops the request when CONTROL_BUCKET is set.
func start(ctx context.Context, request string) error {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	if bucket := os.Getenv("CONTROL_BUCKET"); bucket != "" {
		_, err = s3.NewFromConfig(cfg).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket),
			Key: aws.String("requests/order-42.json"), Body: strings.NewReader(request)})
		return err
	}
	run, err := sfn.NewFromConfig(cfg).StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(os.Getenv("STATE_MACHINE_ARN")), Input: aws.String(request)})
	if err == nil {
		fmt.Println(aws.ToString(run.ExecutionArn))
	}
	return err
}

// archiveEnded is the completion rule's Lambda target.
func archiveEnded(ctx context.Context, event events.CloudWatchEvent) error {
	var detail struct{ Name, Status, Output, Error, Cause string }
	if err := json.Unmarshal(event.Detail, &detail); err != nil || detail.Status != "SUCCEEDED" {
		log.Printf("%s %s: %s: %s", detail.Name, detail.Status, detail.Error, detail.Cause)
		return err
	}
	var out Output // docs/output.md
	if err := json.Unmarshal([]byte(detail.Output), &out); err != nil {
		return err
	}
	if out.Version != 1 {
		return fmt.Errorf("output version %d: this code reads version 1", out.Version)
	}
	log.Printf("%s: %s, %d bytes, CRC-32 %s", out.RequestID, out.Archive.URI, out.Archive.Size, out.Archive.CRC32)
	return nil
}
