// The abort Lambda: aborts the multipart upload and deletes the work
// objects of a failed execution.
package main

import (
	"context"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "abort", create.ConfigFromEnv))
	a := &create.Aborter{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(a.Handle, create.ErrorType)
}
