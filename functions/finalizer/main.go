// The finalizer Lambda: writes the central directory, completes the upload
// with the archive's CRC-32, checks it, reports and cleans up.
package main

import (
	"context"

	"github.com/s3zip/s3zip/internal/lambdaenv"
	"github.com/s3zip/s3zip/workflow"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "finalizer", workflow.ConfigFromEnv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	f := &workflow.Finalizer{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(f.Finalize, workflow.ErrorType)
}
