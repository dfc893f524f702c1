// The extract-abort Lambda: aborts this execution's uploads and deletes the objects it wrote and its work objects.
package main

import (
	"context"
	"os"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env, err := lambdaenv.Load(context.Background(), "extract-abort")
	if err != nil {
		lambdaenv.Fatal(err)
	}
	cfg, err := extract.ConfigFromEnv(os.Getenv)
	if err != nil {
		lambdaenv.Fatal(err)
	}
	h := &extract.Aborter{S3: env.S3, Config: cfg, Log: env.Log}
	lambdaenv.StartWith(h.Abort, extract.ErrorType)
}
