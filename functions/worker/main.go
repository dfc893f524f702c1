// The worker Lambda: builds one Distributed Map batch of parts.
package main

import (
	"context"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "worker", create.ConfigFromEnv))
	w := &create.Worker{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(w.Handle, create.ErrorType)
}
