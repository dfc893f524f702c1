// The extract-worker Lambda: runs one Distributed Map batch of extract jobs.
package main

import (
	"context"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "extract-worker", extract.ConfigFromEnv))
	h := &extract.Worker{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(h.Handle, extract.ErrorType)
}
