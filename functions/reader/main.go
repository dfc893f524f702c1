// The reader Lambda: runs one ReadEntries batch of the read pass (reads
// pieces of entries, DEFLATEs them into intermediate objects in the work
// prefix, reports CRC-32s, sizes and digests).
package main

import (
	"context"

	"github.com/s3zip/s3zip/internal/lambdaenv"
	"github.com/s3zip/s3zip/workflow"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "reader", workflow.ConfigFromEnv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	r := &workflow.Reader{S3: env.S3}
	lambdaenv.Start(r.ReadBatch, workflow.ErrorType)
}
