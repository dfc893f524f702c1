// The extract-planner Lambda: reads an archive's central directory, refuses what cannot be extracted, writes the jobs.
package main

import (
	"context"
	"os"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "extract-planner")
	if err != nil {
		lambdaenv.Fatal(err)
	}
	cfg, err := extract.ConfigFromEnv(os.Getenv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	h := &extract.Planner{S3: env.S3, Config: cfg, Log: env.Log}
	lambdaenv.StartWith(h.Plan, extract.ErrorType)
}
