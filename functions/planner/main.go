// The planner Lambda (PlanArchive and PlanLayout): validates the request,
// lists or reads the sources, writes the read jobs when the entries must be
// read first, plans the archive, writes the plan and creates the multipart upload.
package main

import (
	"context"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "planner", create.ConfigFromEnv))
	p := &create.Planner{S3: env.S3, Config: env.Config, Log: env.Log}
	lambdaenv.Start(p.Handle, create.ErrorType)
}
