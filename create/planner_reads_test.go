package create

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
)

// A checksums file named like an entry is refused before anything is read
// or written, naming the entry's source (not a work object of the read pass).
func TestRunChecksumsFileClashNamesTheSource(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.PutObject(t, "src", "in/SHA256SUMS", logText(1, 100<<10))
	e.srv.PutObject(t, "src", "in/other.txt", logText(2, 100<<10))
	r := e.runner()
	r.Read = func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
		t.Errorf("a read batch ran for a request refused from its names")
		return (&Reader{S3: e.s3}).Handle(ctx, in)
	}
	_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", `,"compression":"deflate","digests":["sha256"],"checksumsFile":"SHA256SUMS"`), "exec-clash")
	var re *failure.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RequestError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "s3://src/in/SHA256SUMS") || strings.Contains(msg, "deflate/") {
		t.Errorf("refusal %q: want it to name s3://src/in/SHA256SUMS, not a work object", msg)
	}
	e.assertClean(t)
}
