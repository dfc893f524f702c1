// The extract-finalizer Lambda: checks every planned object was written and writes the report.
package main

import (
	"context"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "extract-finalizer", extract.ConfigFromEnv))
	h := &extract.Finalizer{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(h.Handle, extract.ErrorType)
}
