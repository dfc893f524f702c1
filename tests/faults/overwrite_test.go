package faults_test

// Fault rows for extract --overwrite: a run that fails or is killed part-way
// after replacing some objects must leave every object either as it was or
// as the archive has it, never missing.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
)

// prefill writes what a user had under prefix before an --overwrite run:
// old bytes at some of the archive's keys, and an object the archive does
// not have. It returns them, by name under prefix.
func (w *extractWorld) prefill(t *testing.T, prefix string) map[string][]byte {
	t.Helper()
	old := map[string][]byte{
		"copy/large.bin":    body(91, 6*mib),
		"copy/mid.bin":      body(92, 3*mib),
		"read/00.txt":       []byte("what the user had before\n"),
		"read/small-03.bin": body(93, 700),
		"mine.txt":          []byte("not in the archive\n"),
	}
	for name, b := range old {
		w.srv.PutObject(t, "dst", prefix+name, b)
	}
	return old
}

// judgeOverwrite checks that after a failed or killed --overwrite run every
// object under prefix is as it was or as the archive has it: none the user
// had is missing, and none holds anything else.
func (w *extractWorld) judgeOverwrite(t *testing.T, started time.Time, prefix string, old map[string][]byte, err error) {
	t.Helper()
	var f findings
	list, lerr := w.direct.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("dst"), Prefix: &prefix})
	if lerr != nil {
		t.Fatal(lerr)
	}
	got := map[string][]byte{}
	for _, o := range list.Contents {
		got[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = w.object(t, aws.ToString(o.Key))
	}
	var missing, wrong []string
	kept, replaced := 0, 0
	for name, b := range old {
		switch g, ok := got[name]; {
		case !ok:
			missing = append(missing, name)
		case bytes.Equal(g, b):
			kept++
		case bytes.Equal(g, w.entries[name]):
			replaced++
		default:
			wrong = append(wrong, name)
		}
	}
	for name, g := range got {
		if _, had := old[name]; !had && !bytes.Equal(g, w.entries[name]) {
			wrong = append(wrong, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(wrong)
	if len(missing) > 0 {
		f.bad("objects the user had are gone: %s", strings.Join(missing, ", "))
	}
	if len(wrong) > 0 {
		f.bad("objects hold neither the old bytes nor the archive's: %s", strings.Join(wrong, ", "))
	}
	if replaced == 0 {
		f.bad("no object was replaced before the failure; the scenario tests nothing")
	}
	f.add(fmt.Sprintf("%d kept, %d replaced by the archive's, %d missing", kept, replaced, len(missing)))
	if err == nil {
		f.bad("the run succeeded; the scenario needs it to fail part-way")
	} else {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		f.add(msg)
	}
	w.conclude(t, started, nil, "every object as it was or as the archive has it", f.obs, !f.failed)
}

// findings are a row's observations; a bad one fails the row.
type findings struct {
	obs    []string
	failed bool
}

func (f *findings) add(o string) { f.obs = append(f.obs, o) }

func (f *findings) bad(format string, a ...any) {
	f.failed = true
	f.add("BAD: " + fmt.Sprintf(format, a...))
}

// failLastWrite fails (not transiently) the write of the last object an
// extraction makes into the destination: everything else was written.
type failLastWrite struct {
	extract.Client
	prefix string
	left   atomic.Int32 // writes into prefix still allowed
}

var errLastWrite = errors.New("injected: the destination refused the last write")

func (f *failLastWrite) allowed(key *string) bool {
	return !strings.HasPrefix(aws.ToString(key), f.prefix) || f.left.Add(-1) >= 0
}

func (f *failLastWrite) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if !f.allowed(in.Key) {
		return nil, errLastWrite
	}
	return f.Client.PutObject(ctx, in, o...)
}

func (f *failLastWrite) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if !f.allowed(in.Key) {
		return nil, errLastWrite
	}
	return f.Client.CompleteMultipartUpload(ctx, in, o...)
}

// TestExtractOverwriteNeverLoses: an --overwrite extraction into a prefix
// holding older copies of some entries fails at its last write (failed) or
// has its batch killed mid-copy and is then undone as the state machine's
// Abort or `s3zip cleanup` undoes it (killed). Either way every object the
// user had is still there, with its old bytes or the archive's.
func TestExtractOverwriteNeverLoses(t *testing.T) {
	w := newExtractWorld(t)
	ctx := context.Background()
	t.Run("failed", func(t *testing.T) {
		started := time.Now()
		prefix := "out/overwrite-failed/"
		old := w.prefill(t, prefix)
		req := extractRequest(prefix)
		req.Overwrite = true
		f := &failLastWrite{Client: w.direct, prefix: prefix}
		f.left.Store(int32(len(w.entries) - 1))
		_, err := extract.Run(ctx, f, req, nil)
		w.judgeOverwrite(t, started, prefix, old, err)
	})
	// Killed: the state machine's Abort gets the extraction as its state;
	// `s3zip cleanup` after a kill -9 finds it in the work prefix.
	for _, how := range []string{"aborted", "cleaned up"} {
		t.Run("killed, "+how, func(t *testing.T) {
			started := time.Now()
			prefix := "out/overwrite-killed-" + strings.ReplaceAll(how, " ", "-") + "/"
			old := w.prefill(t, prefix)
			cfg := extract.Config{WorkBucket: "work", BatchSize: 100, Workers: 1}
			execution := "overwrite-killed-" + strings.ReplaceAll(how, " ", "-")
			// Jobs run largest first, one at a time: the batch is killed once
			// copy/large.bin's three parts are copied; that entry is written
			// (writes in flight finish), no job starts after it.
			ex, _, kerr := w.killedBatch(t, cfg, prefix, execution, true, 3)
			a := &extract.Aborter{S3: w.direct, Config: cfg}
			var err error
			if how == "aborted" {
				_, err = a.Handle(ctx, extract.AbortInput{State: mustJSON(ex), Error: mustJSON(map[string]string{"Error": "Sandbox.Timedout"}), Execution: execution})
			} else {
				_, err = a.AbortDead(ctx, execution)
			}
			if err != nil {
				kerr = fmt.Errorf("%s: %w", how, err)
			}
			w.judgeOverwrite(t, started, prefix, old, fmt.Errorf("batch killed mid-copy: %w", kerr))
		})
	}
}
