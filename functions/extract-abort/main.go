// The extract-abort Lambda: aborts this execution's uploads and deletes the objects it wrote and its work objects.
package main

import (
	"context"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "extract-abort", extract.ConfigFromEnv))
	h := &extract.Aborter{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(h.Handle, extract.ErrorType)
}
