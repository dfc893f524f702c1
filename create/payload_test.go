package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/stepfn"
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
