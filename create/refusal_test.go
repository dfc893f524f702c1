package create

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
)

// A local run refused after the read pass (here: the destination appeared
// while the entries were read) leaves nothing: PlanLayout's refusal is
// followed by Abort, as the state machine's Catch does, and the compressed
// copies and read results go with the work prefix.
func TestRunRefusedAfterReadPassLeavesNothing(t *testing.T) {
	e := newEnv(t, nil)
	for k, body := range map[string][]byte{"in/log.txt": logText(1, 3*mib), "in/b.txt": logText(2, 200<<10)} {
		e.srv.PutObject(t, "src", k, body)
	}
	r := e.runner()
	reads := 0
	r.Read = func(ctx context.Context, in ReadBatchInput) (*ReadBatchResult, error) {
		reads++
		e.srv.PutObject(t, "dst", "out/a.zip", []byte("someone else's")) // meanwhile
		return (&Reader{S3: e.s3}).Handle(ctx, in)
	}
	r.Config.DefaultMaxConcurrency = 1
	_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", `,"compression":"deflate"`), "exec-appeared")
	var exists *failure.DestinationExistsError
	if !errors.As(err, &exists) {
		t.Fatalf("err = %v, want a DestinationExistsError", err)
	}
	if reads == 0 {
		t.Fatal("no read batch ran: the refusal came before the read pass")
	}
	e.assertClean(t)
	if got := e.srv.GetObject(t, "dst", "out/a.zip"); !bytes.Equal(got, []byte("someone else's")) {
		t.Errorf("the destination that appeared was changed: %q", got)
	}
}

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
