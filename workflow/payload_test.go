package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// A batch of parts holding ~17,000 small entries without stored CRC-32s
// computes ~17,000 CRCs. In the batch's output they were over 300 KiB:
// States.DataLimitExceeded on AWS. They go through an S3 object now, and
// the output stays a few fields per part.
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
		out, err := w.Build(ctx, in)
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
	if crcsBytes <= MaxPayloadBytes {
		t.Fatalf("the largest batch computed %d bytes of CRC-32s; the case needs more than %d to hold anything", crcsBytes, MaxPayloadBytes)
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
		req := request("duo", "in/", "out/big-input.zip", `,"partSize":5242880`+strings.Repeat(" ", MaxPayloadBytes))
		_, err := e.runner().Run(context.Background(), req, "exec-big-input")
		var dl *DataLimitError
		if !errors.As(err, &dl) || !strings.Contains(err.Error(), "execution's input") {
			t.Fatalf("err = %v, want a DataLimitError for the execution's input", err)
		}
		e.assertClean(t)
	})
	t.Run("child-result", func(t *testing.T) {
		r := e.runner()
		w := &Worker{S3: e.s3, Config: r.Config}
		r.Batch = func(ctx context.Context, in BatchInput) (*BatchResult, error) {
			out, err := w.Build(ctx, in)
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
		var dl *DataLimitError
		if !errors.As(err, &dl) || !strings.Contains(dl.What, "BuildParts child") {
			t.Fatalf("err = %v, want a DataLimitError for a BuildParts child's result", err)
		}
		e.assertClean(t)
	})
}

// The local ItemBatcher cuts batches by MaxInputBytesPerBatch as well as by
// count, as Step Functions does; an item alone over it is refused.
func TestBatchItemsByBytes(t *testing.T) {
	items := make([]string, 400)
	for i := range items {
		items[i] = strings.Repeat("x", 1000+i)
	}
	wrap := func(its []string) any {
		return map[string]any{"Items": its, "BatchInput": map[string]string{"job": strings.Repeat("j", 500)}}
	}
	batches, err := batchItems(items, 1000, wrap, "test")
	if err != nil {
		t.Fatal(err)
	}
	var joined []string
	for i, b := range batches {
		doc, _ := json.Marshal(wrap(b))
		if len(doc) > MaxInputBytesPerBatch {
			t.Errorf("batch %d is %d bytes of input, over %d", i, len(doc), MaxInputBytesPerBatch)
		}
		if i < len(batches)-1 {
			next, _ := json.Marshal(wrap(append(b[:len(b):len(b)], batches[i+1][0])))
			if len(next) <= MaxInputBytesPerBatch {
				t.Errorf("batch %d ends early: the next item fits (%d bytes)", i, len(next))
			}
		}
		joined = append(joined, b...)
	}
	if len(batches) < 2 || len(joined) != len(items) {
		t.Fatalf("%d batches of %d items, want several holding all %d", len(batches), len(joined), len(items))
	}
	if b, _ := batchItems(items, 7, wrap, "test"); len(b) != (len(items)+6)/7 {
		t.Errorf("%d batches of at most 7, want %d", len(b), (len(items)+6)/7)
	}
	_, err = batchItems([]string{strings.Repeat("y", MaxInputBytesPerBatch)}, 10, wrap, "test")
	var dl *DataLimitError
	if !errors.As(err, &dl) {
		t.Fatalf("err = %v, want a DataLimitError for an item alone over the limit", err)
	}
}

// The local ItemBatcher cuts by the bytes the state machines' ItemBatchers
// declare.
func TestMaxInputBytesPerBatchIsTheASLs(t *testing.T) {
	files, err := filepath.Glob("../statemachine/*.asl.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no statemachine/*.asl.json (%v)", err)
	}
	seen := 0
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"MaxInputBytesPerBatch":\s*(\d+)`).FindAllSubmatch(doc, -1) {
			seen++
			if string(m[1]) != strconv.Itoa(MaxInputBytesPerBatch) {
				t.Errorf("%s: MaxInputBytesPerBatch %s, the local Runner batches by %d", f, m[1], MaxInputBytesPerBatch)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no MaxInputBytesPerBatch in statemachine/*.asl.json: the check checked nothing")
	}
}
