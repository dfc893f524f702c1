// The extract-worker Lambda: runs one Distributed Map batch of extract jobs.
package main

import (
	"context"
	"os"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "extract-worker")
	if err != nil {
		lambdaenv.Fatal(err)
	}
	cfg, err := extract.ConfigFromEnv(os.Getenv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	h := &extract.Worker{S3: env.S3, Config: cfg, Log: env.Log}
	lambdaenv.StartWith(h.Batch, extract.ErrorType)
}
