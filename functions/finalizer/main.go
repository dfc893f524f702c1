// The finalizer Lambda: writes the central directory, completes the upload
// with the archive's CRC-32, checks it, reports and cleans up.
package main

import (
	"context"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/lambdaenv"
	"github.com/s3zip/s3zip/internal/presign"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "finalizer", create.ConfigFromEnv))
	f := &create.Finalizer{S3: env.S3, Config: env.Config, Log: env.Log, Links: presign.Signer{Client: env.S3}}
	lambdaenv.Start(f.Handle, create.ErrorType)
}
