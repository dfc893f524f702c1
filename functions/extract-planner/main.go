// The extract-planner Lambda: reads an archive's central directory, refuses what cannot be extracted, writes the jobs.
package main

import (
	"context"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "extract-planner", extract.ConfigFromEnv))
	h := &extract.Planner{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(h.Handle, extract.ErrorType)
}
