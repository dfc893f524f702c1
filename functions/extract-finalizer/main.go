// The extract-finalizer Lambda: checks every planned object was written and writes the report.
package main

import (
	"context"
	"os"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "extract-finalizer")
	if err != nil {
		lambdaenv.Fatal(err)
	}
	cfg, err := extract.ConfigFromEnv(os.Getenv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	h := &extract.Finalizer{S3: env.S3, Config: cfg, Log: env.Log}
	lambdaenv.StartWith(h.Finalize, extract.ErrorType)
}
