package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/plan"
	"github.com/s3zip/s3zip/zipread"
)

func runExtract(ctx context.Context, args []string, stdout io.Writer) error {
	fs, xf := newExtractFlags()
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	req, err := xf.request(fs, pos)
	if err != nil {
		return err
	}
	checks := []bucketCheck{{role: "archive", bucket: req.Bucket, object: req.Key}, {role: "destination", bucket: req.DestBucket}}
	if req.WorkBucket != "" {
		checks = append(checks, bucketCheck{role: "work", bucket: req.WorkBucket})
	}
	client, err := connect(ctx, "extract", *xf.endpoint, checks...)
	if err != nil {
		return err
	}
	plain := client // housekeeping of the run marker stays out of the request counts
	counter := s3metrics.New()
	progress := newProgressPrinter(os.Stderr)
	start := time.Now()
	req.Execution = fmt.Sprintf("local-extract-%s", start.UTC().Format("20060102T150405.000000000"))
	if req.WorkBucket == "" {
		req.WorkBucket = req.DestBucket
	}
	lease := startExtractRun(ctx, plain, req)
	res, err := extract.Run(ctx, s3.New(client.Options(), counter.Option()), req, progress.updateExtract)
	progress.finishRun(ctx, err)
	if kept := lease.end(ctx, err); kept != nil {
		return keptRun(kept, req.WorkBucket, clientEndpoint(plain))
	}
	if _, ok := interrupted(ctx); ok && err != nil {
		return interruptedExtract(ctx, plain, req, err)
	}
	var fe *zipread.FormatError
	if errors.As(err, &fe) { // the planner read no further than the central directory, so nothing was written
		return usageErrorf("extract: s3://%s/%s is not a readable ZIP archive: %s; nothing was written", req.Bucket, req.Key, fe.What)
	}
	if err != nil {
		return err
	}
	made := extractedHere{res: res, counter: counter, wall: time.Since(start)}
	if *xf.asJSON {
		return printJSON(stdout, map[string]any{"result": res, "plan": res.Plan, "requests": counter.Snapshot(), "wallSeconds": made.wall.Seconds()})
	}
	made.print(stdout, req)
	return nil
}

// extractFlags are extract's flags.
type extractFlags struct {
	endpoint, modelFile, workBucket *string
	keep                            *string
	workers                         *int
	overwrite, skip, asJSON         *bool
	small                           *int64
	types                           objmeta.ContentTypes
}

func newExtractFlags() (*flags, *extractFlags) {
	fs := newFlags("extract", "s3zip extract s3://BUCKET/KEY.zip s3://BUCKET/PREFIX/ [--endpoint URL] [--workers N] [--overwrite] [--skip-unsupported] [--content-type EXT=TYPE]... [--work-bucket BUCKET] [--small-stored BYTES | --model FILE] [--keep DURATION] [--json]",
		"Unpack an archive in S3 into objects under a prefix: the extract workflow's handlers (plan, batches of\n"+
			"jobs, finalize; abort on failure) run here, as the state machine runs them. A report\n"+
			"(PREFIX/"+extract.ReportName+") lists every object written.")
	xf := &extractFlags{
		endpoint:   fs.String("endpoint", "", "S3 endpoint `URL` (default: AWS, or $S3_ENDPOINT / $AWS_ENDPOINT_URL_S3)"),
		workers:    fs.Int("workers", 8, "jobs run at once, 1 to 1000"),
		overwrite:  fs.Bool("overwrite", false, "replace objects that already exist under the prefix"),
		skip:       fs.Bool("skip-unsupported", false, "skip entries with unsupported compression methods or encryption (listed in the report) instead of refusing the archive"),
		small:      sizeFlag(fs, "small-stored", 0, "STORED entries below this `size` (bytes, or 1MiB, 500KB) are read and put instead of copied server-side; 0 copies every one (default: the cost model's choice, see --model)"),
		modelFile:  fs.String("model", "", "`file` with the cost model's profile of where this runs, as JSON (plan.Model's fields; a bench results.json's \"model\"), which chooses the STORED entries to read rather than copy (default: AWS's profile)"),
		asJSON:     fs.Bool("json", false, "print the result as JSON"),
		workBucket: fs.String("work-bucket", "", "`bucket` for the jobs and results while the run lasts, under s3zip-work/extract/ (default: the destination bucket)"),
		keep:       keepFlag(fs),
	}
	fs.Var(&xf.types, "content-type", "`EXT=TYPE`: objects whose name ends in .EXT get Content-Type TYPE, whatever the archive kept (repeatable; otherwise: what the archive kept, else a fixed table by extension, else "+objmeta.DefaultContentType+")")
	return fs, xf
}

// request returns the extract the arguments and flags describe, with the
// options checked. It extracts the archive pos[0] into the prefix pos[1].
func (xf *extractFlags) request(fs *flags, pos []string) (extract.Request, error) {
	if err := wantArgs("extract", pos, "s3://BUCKET/KEY.zip", "s3://BUCKET/PREFIX/"); err != nil {
		return extract.Request{}, err
	}
	ab, ak, err := parseS3ObjectURI(pos[0])
	if err != nil {
		return extract.Request{}, usageErrorf("extract: archive: %v", err)
	}
	db, dp, err := parseS3URI(pos[1])
	if err != nil {
		return extract.Request{}, usageErrorf("extract: destination: %v", err)
	}
	if dp != "" && !strings.HasSuffix(dp, "/") {
		return extract.Request{}, usageErrorf("extract: destination %q: a prefix must end in / (s3://%s/%s/)", pos[1], db, dp)
	}
	if *xf.workers < 1 || *xf.workers > 1000 {
		return extract.Request{}, usageErrorf("extract: --workers %d: want 1 to 1000", *xf.workers)
	}
	smallStored, err := smallStoredOption(fs, *xf.small)
	if err != nil {
		return extract.Request{}, err
	}
	keep, err := parseKeep("extract", *xf.keep)
	if err != nil {
		return extract.Request{}, err
	}
	var model *plan.Model
	if *xf.modelFile != "" {
		if model, err = readModel(*xf.modelFile); err != nil {
			return extract.Request{}, usageErrorf("extract: --model: %v", err)
		}
	}
	return extract.Request{
		Bucket: ab, Key: ak, DestBucket: db, Prefix: dp, Overwrite: *xf.overwrite, Workers: *xf.workers, WorkBucket: *xf.workBucket, Keep: keep,
		Options: extract.Options{SkipUnsupported: *xf.skip, SmallStored: smallStored, Model: model, ContentTypes: xf.types},
	}, nil
}

// extractedHere is what an extract run here wrote, and what it took.
type extractedHere struct {
	res     *extract.Result
	counter *s3metrics.Counter
	wall    time.Duration
}

// print is the summary of the extract of req without --json.
func (x extractedHere) print(w io.Writer, req extract.Request) {
	res := x.res
	fmt.Fprintf(w, "archive     %s (%s)\n", res.Archive, count(res.Entries, "entry", "entries"))
	fmt.Fprintf(w, "objects     %d, %s under s3://%s/%s\n", len(res.Objects), humanBytes(res.Extracted), req.DestBucket, req.Prefix)
	if len(res.Skipped) > 0 {
		fmt.Fprintf(w, "skipped     %s (listed in the report)\n", count(len(res.Skipped), "entry", "entries"))
	}
	fmt.Fprintf(w, "types       %s\n", typeCounts(res.ContentTypes))
	fmt.Fprintf(w, "copied      %s server-side\n", humanBytes(res.Copied))
	fmt.Fprintf(w, "streamed    %s through workers (%s)\n", humanBytes(res.Streamed), readRule(res.Plan))
	printRequests(w, x.counter)
	fmt.Fprintf(w, "report      %s\n", res.Report)
	fmt.Fprintf(w, "wall time   %.2f s\n", x.wall.Seconds())
}

// readRule says which entries the plan read rather than copied.
func readRule(p *extract.Plan) string {
	rule := fmt.Sprintf("STORED entries under %s read, the rest copied", humanBytes(p.ReadBelow))
	if p.ReadBelow <= 0 {
		rule = "every STORED entry copied, DEFLATE entries read"
	}
	if p.ReadAll {
		return rule + "; but S3 copies no range of an archive under 5 MiB, so every entry was read"
	}
	return rule
}

// typeCounts is how many objects got each Content-Type, most first.
func typeCounts(counts map[string]int) string {
	types := objmeta.MostFirst(counts)
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%d %s", counts[t], t)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// smallStoredOption is --small-stored as extract.Options takes it, where 0
// is the model's choice and -1 copies every STORED entry. A value typed is
// honoured, never replaced by the model's, so a typed 0 reads none and
// copies every one.
func smallStoredOption(fs *flags, bytes int64) (int64, error) {
	switch {
	case !fs.given("small-stored"):
		return 0, nil
	case bytes == 0:
		return -1, nil
	case bytes < 0:
		return 0, usageErrorf("extract: --small-stored %d: want 0 or more bytes (0 copies every STORED entry)", bytes)
	}
	return bytes, nil
}

// phaseExtracting is an extraction's one phase between planning and done.
const phaseExtracting create.Phase = "extracting"

// updateExtract shows an extraction's progress with the same printer as
// create, counting jobs where create counts parts.
func (p *progressPrinter) updateExtract(pr extract.Progress) {
	p.mu.Lock()
	p.unit = "jobs"
	if !p.rateSaid && pr.WriteSeconds >= 1 {
		// Before the first job, say what S3's write rate alone allows.
		p.rateSaid = true
		fmt.Fprintf(p.w, "%sS3's rate   %d writes (PUT, COPY, POST) under one prefix: at least %.0f s at the %.0f a second S3 serves a prefix, whatever the workers\n",
			map[bool]string{true: "\r\033[K"}[p.terminal], pr.Writes, pr.WriteSeconds, float64(pr.Writes)/pr.WriteSeconds)
	}
	p.mu.Unlock()
	p.update(create.Progress{Phase: phaseExtracting, PartsDone: pr.JobsDone, Parts: pr.Jobs, BytesDone: pr.BytesDone, Bytes: pr.Bytes})
}

// readModel reads a cost model profile, either a plan.Model as JSON or a
// document such as a bench results.json holding one as "model". Fields it
// does not give are AWS's, from plan.DefaultModel.
func readModel(path string) (*plan.Model, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v (want a JSON object of plan.Model's fields)", path, err)
	}
	if len(doc.Model) > 0 {
		raw = doc.Model
	}
	m := plan.DefaultModel
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v (want a JSON object of plan.Model's fields, e.g. {\"WorkerBandwidth\": 12e6, \"RequestLatency\": 0.02})", path, err)
	}
	if m.WorkerBandwidth <= 0 || m.CopyRate <= 0 || m.RequestLatency < 0 || m.CompletePerByte < 0 {
		return nil, fmt.Errorf("%s: WorkerBandwidth %g and CopyRate %g must be positive, RequestLatency %g and CompletePerByte %g not negative (bytes/s and seconds)",
			path, m.WorkerBandwidth, m.CopyRate, m.RequestLatency, m.CompletePerByte)
	}
	return &m, nil
}
