// The extract-worker Lambda: runs one Distributed Map batch of extract jobs.
package main

import (
	"context"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "extract-worker", extract.ConfigFromEnv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	h := &extract.Worker{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(h.Batch, extract.ErrorType)
}
