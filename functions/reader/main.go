// The reader Lambda: runs one ReadEntries batch of a read round: reads
// pieces of entries, DEFLATEs them into intermediate objects in the work
// prefix and reports CRC-32s, sizes and digests; or looks objects up (a
// manifest's, pinned; the CRC-32s the layout needs), HEAD_CONCURRENCY at once.
package main

import (
	"context"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/lambdaenv"
)

func main() {
	env := lambdaenv.Must(lambdaenv.Load(context.Background(), "reader", create.ConfigFromEnv))
	r := &create.Reader{S3: env.S3, Lookups: env.Config.HeadConcurrency}
	lambdaenv.Start(r.Handle, create.ErrorType)
}
