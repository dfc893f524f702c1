package create

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/stepfn"
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

// A batch of parts holding ~17,000 small entries without stored CRC-32s
// computes ~17,000 CRCs. In the batch's output they would be over 300 KiB:
// States.DataLimitExceeded on AWS. They go through an S3 object, and the
// output stays a few fields per part.
func TestRunManySmallEntriesWithoutCRCStayUnderPayloadQuota(t *testing.T) {
	e := newEnv(t, nil)
	const n = 19000
	// Without a stored checksum: the workers compute every CRC-32.
	objects := s3test.NumberedObjects("many/", n, 256)
	e.srv.PutObjects(t, "src", objects)
	r := e.runner()
	r.Config.PartsPerBatch = 8
	w := &Worker{S3: e.s3, Config: r.Config}
	var crcsBytes, outputBytes int
	r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
		out, err := w.Handle(ctx, in)
		if err != nil {
			return nil, err
		}
		doc, _ := json.Marshal(out)
		outputBytes = max(outputBytes, len(doc))
		if out.CRCsKey != "" {
			crcs := e.srv.GetObject(t, "work", out.CRCsKey)
			crcsBytes = max(crcsBytes, len(crcs))
		}
		return out, nil
	}
	res, err := r.Run(context.Background(), request("duo", "many/", "out/many.zip", `,"partSize":5242880`), "exec-many")
	if err != nil {
		t.Fatal(err)
	}
	if crcsBytes <= stepfn.MaxPayloadBytes {
		t.Fatalf("the largest batch computed %d bytes of CRC-32s; the case needs more than %d to hold anything", crcsBytes, stepfn.MaxPayloadBytes)
	}
	if outputBytes > 4<<10 {
		t.Errorf("a batch's output is %d bytes: it grows with the entries", outputBytes)
	}
	t.Logf("%d entries, %d worker parts; largest batch: %d bytes of output, %d bytes of CRC-32s in S3", res.Output.Stats.Entries, res.Job.WorkerParts, outputBytes, crcsBytes)

	path := filepath.Join(t.TempDir(), "many.zip")
	e.srv.DownloadFile(t, "dst", "out/many.zip", path)
	zipcheck.CheckWith(t, zipcheck.ReaderGo, path, zipcheck.WantObjects(objects, "many/"))
	e.assertClean(t)
}

// The local engine refuses what Step Functions would: an execution input, a
// Map child's result over 256 KiB.
func TestRunnerRefusesOversizedPayloads(t *testing.T) {
	e := newEnv(t, mixedObjects("in/", s3test.ChecksumNone))
	t.Run("execution-input", func(t *testing.T) {
		req := request("duo", "in/", "out/big-input.zip", `,"partSize":5242880`+strings.Repeat(" ", stepfn.MaxPayloadBytes))
		_, err := e.runner().Run(context.Background(), req, "exec-big-input")
		var dl *stepfn.DataLimitError
		if !errors.As(err, &dl) || !strings.Contains(err.Error(), "execution's input") {
			t.Fatalf("err = %v, want a DataLimitError for the execution's input", err)
		}
		e.assertClean(t)
	})
	t.Run("child-result", func(t *testing.T) {
		r := e.runner()
		w := &Worker{S3: e.s3, Config: r.Config}
		r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
			out, err := w.Handle(ctx, in)
			if err != nil {
				return nil, err
			}
			// A worker that still reported what grows with the entries.
			for i := range 3000 {
				out.Parts = append(out.Parts, PartResult{Part: in.Items[0].Number, ETag: fmt.Sprintf("%0100d", i)})
			}
			return out, nil
		}
		_, err := r.Run(context.Background(), request("duo", "in/", "out/big-result.zip", `,"partSize":5242880`), "exec-big-result")
		var dl *stepfn.DataLimitError
		if !errors.As(err, &dl) || !strings.Contains(dl.What, "BuildParts child") {
			t.Fatalf("err = %v, want a DataLimitError for a BuildParts child's result", err)
		}
		e.assertClean(t)
	})
}

// A run the planner refuses before writing anything has nothing to clean
// up, so the Runner does not run the Abort state: no requests after the
// refusal (an abort against an S3 that just refused the run only fails
// again, with retries and warnings around the real error).
func TestRunnerSkipsAbortWhenPlanningWroteNothing(t *testing.T) {
	e := newEnv(t, []object{{key: "p/a.txt", size: 10}, {key: "q/x/same.txt", size: 1}, {key: "q/y/same.txt", size: 2}})
	e.srv.PutObject(t, "dst", "taken.zip", []byte("someone's"))
	// "sub" and "sub/x": a file and a folder of the same name (a POSIX-backed
	// server cannot hold both keys; a manifest names them so).
	e.srv.PutObject(t, "src", "lists/clash.csv", []byte("key,name\np/a.txt,sub\nq/x/same.txt,sub/x\n"))
	clash := `{"source":{"bucket":"src","manifest":{"bucket":"src","key":"lists/clash.csv"}},"destination":{"bucket":"dst","key":%q},"options":{%s}}`
	for _, tc := range []struct {
		name    string
		request json.RawMessage
		want    any
		says    []string // what the refusal must name
	}{
		{"destination-exists", request("duo", "p/", "taken.zip", ""), new(*failure.DestinationExistsError), nil},
		{"duplicate-names", request("duo", "q/", "d.zip", `,"names":"flat"`), new(*failure.RequestError), nil},
		{"empty-prefix", request("duo", "none/", "e.zip", ""), new(*failure.RequestError), nil},
		{"missing-manifest", json.RawMessage(`{"source":{"manifest":{"bucket":"src","key":"none.csv"}},"destination":{"bucket":"dst","key":"m.zip"}}`), new(*failure.RequestError), nil},
		{"file-and-folder", json.RawMessage(fmt.Sprintf(clash, "c.zip", "")), new(*failure.RequestError), []string{`file "sub" (key "p/a.txt")`, `"sub/x" (key "q/x/same.txt")`, "manifest"}},
		{"file-and-folder-compressed", json.RawMessage(fmt.Sprintf(clash, "cz.zip", `"compression":"deflate"`)), new(*failure.RequestError), []string{`"sub/x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := s3metrics.New()
			r := e.runner()
			r.S3 = s3.New(e.s3.Options(), counter.Option())
			_, err := r.Run(context.Background(), tc.request, "plannednothing-"+tc.name)
			if err == nil || !errors.As(err, tc.want) {
				t.Fatalf("error %v, want a %T", err, tc.want)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %s", err, s)
				}
			}
			snap := counter.Snapshot()
			for _, op := range []string{"ListMultipartUploads", "DeleteObjects", "AbortMultipartUpload", "PutObject", "CreateMultipartUpload"} {
				if snap[op] > 0 {
					t.Errorf("%d %s after a refusal that wrote nothing (requests %v)", snap[op], op, snap)
				}
			}
		})
	}
	if left := e.srv.Leftovers(t, "work", "dst"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

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
