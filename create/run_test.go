package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

const mib = 1 << 20

type object struct {
	key      string
	size     int
	checksum s3test.Checksum
}

// env is a versitygw with a source, a destination and a work bucket.
type env struct {
	srv  *s3test.Server
	s3   *s3.Client
	want map[string][]byte // key → bytes
}

func newEnv(t *testing.T, objects []object) *env {
	t.Helper()
	srv := s3test.Start(t)
	e := &env{srv: srv, s3: srv.Client(t), want: map[string][]byte{}}
	for _, b := range []string{"src", "dst", "work"} {
		srv.CreateBucket(t, b)
	}
	rng := rand.New(rand.NewPCG(uint64(len(objects)), 7))
	for _, o := range objects {
		body := make([]byte, o.size)
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		srv.PutObject(t, "src", o.key, body, s3test.WithChecksum(o.checksum))
		e.want[o.key] = body
	}
	return e
}

func (e *env) runner() *Runner {
	return &Runner{S3: e.s3, Config: Config{WorkBucket: "work", DefaultMaxConcurrency: 4, PartsPerBatch: 2}}
}

func request(strategy, prefix, dest string, extra string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":{"bucket":"src","prefix":%q},"destination":{"bucket":"dst","key":%q},"options":{"strategy":%q%s}}`, prefix, dest, strategy, extra))
}

// checkArchive downloads the archive and reads it with every ZIP reader.
func (e *env) checkArchive(t *testing.T, key, prefix string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.zip")
	e.srv.DownloadFile(t, "dst", key, path)
	var want []zipcheck.Want
	for k, body := range e.want {
		if strings.HasPrefix(k, prefix) {
			want = append(want, zipcheck.WantBytes(strings.TrimPrefix(k, prefix), body))
		}
	}
	zipcheck.Check(t, path, want)
}

// assertClean checks that nothing of a run is left: no work objects, no
// multipart uploads.
func (e *env) assertClean(t *testing.T) {
	t.Helper()
	for _, l := range e.srv.Leftovers(t, "work", "dst") {
		t.Errorf("left behind: %s", l)
	}
}

func mixedObjects(prefix string, checksum s3test.Checksum) []object {
	return []object{
		{prefix + "small/a.txt", 1000, checksum},
		{prefix + "small/empty", 0, checksum},
		{prefix + "big/b.bin", 6*mib + 123, checksum},
		{prefix + "mid.bin", 3 * mib, checksum},
		{prefix + "big/c.bin", 7 * mib, checksum},
		{prefix + "ünïcode/名前.txt", 4*mib + 5, checksum},
	}
}

func TestRunBuildsValidArchive(t *testing.T) {
	for _, checksum := range []s3test.Checksum{s3test.ChecksumNone, s3test.ChecksumCRC32} {
		for _, strategy := range []string{"stream", "duo"} {
			name := fmt.Sprintf("%s/checksum-%s", strategy, map[s3test.Checksum]string{"": "none"}[checksum]+string(checksum))
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, mixedObjects("in/", checksum))
				res, err := e.runner().Run(context.Background(), request(strategy, "in/", "out/a.zip", `,"partSize":5242880`), "exec-1")
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%+v", res.Output.Stats)
				if strategy == "duo" && res.Output.Stats.CopyParts == 0 {
					t.Errorf("duo plan copied nothing")
				}
				e.checkArchive(t, "out/a.zip", "in/")
				e.assertClean(t)
			})
		}
	}
}

func TestRunFailsCleanly(t *testing.T) {
	cases := []struct {
		name    string
		req     json.RawMessage
		wantErr any
	}{
		{"empty-prefix", request("duo", "nothing-here/", "out/x.zip", ""), new(*failure.RequestError)},
		{"bad-strategy", request("zip-harder", "in/", "out/x.zip", ""), new(*failure.RequestError)},
		{"destination-exists", request("duo", "in/", "existing.zip", ""), new(*failure.DestinationExistsError)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, mixedObjects("in/", s3test.ChecksumNone))
			e.srv.PutObject(t, "dst", "existing.zip", []byte("not ours"))
			_, err := e.runner().Run(context.Background(), c.req, "exec-fail")
			if !errors.As(err, c.wantErr) {
				t.Fatalf("err = %T %v", err, err)
			}
			e.assertClean(t)
		})
	}
}

func TestRunSourceChangedMidway(t *testing.T) {
	e := newEnv(t, mixedObjects("in/", s3test.ChecksumNone))
	r := e.runner()
	w := &Worker{S3: e.s3, Config: r.Config}
	overwritten := false
	r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
		if !overwritten {
			overwritten = true
			e.srv.PutObject(t, "src", "in/big/c.bin", make([]byte, 7*mib))
			e.srv.PutObject(t, "src", "in/mid.bin", make([]byte, 3*mib))
		}
		return w.Handle(ctx, in)
	}
	r.Config.DefaultMaxConcurrency = 1
	_, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", ""), "exec-changed")
	var changed *failure.SourceChangedError
	if !errors.As(err, &changed) {
		t.Fatalf("err = %v, want SourceChangedError", err)
	}
	e.assertClean(t)
	if _, err := e.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/a.zip")}); err == nil {
		t.Fatal("an archive was left at the destination")
	}
}
