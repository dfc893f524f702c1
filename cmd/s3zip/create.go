package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/workflow"
)

func init() {
	register(command{"create", "build an archive: the whole workflow, run from here against any S3 endpoint", runCreate})
}

func runCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("create", "s3zip create (--source s3://bucket/prefix/ | --manifest s3://bucket/key | --inventory s3://bucket/…/manifest.json) --dest s3://bucket/out.zip [flags]",
		"Build a ZIP archive of S3 objects in S3: the Step Functions workflow (plan, build parts, finalize),\n"+
			"run from here against any S3 endpoint. Nothing is left behind on failure: the upload is aborted\n"+
			"and the work objects removed. A report (<dest>.report.json) lists every entry.")
	rf := addRequestFlags(fs, "archive the objects a CSV or JSON Lines manifest at `s3://bucket/key` lists (instead of --source); lines without a bucket name objects in the manifest's bucket")
	dest := fs.String("dest", "", "write the archive to `s3://bucket/key.zip`")
	batch := fs.Int("batch", 0, "part jobs per batch (the Map's MaxItemsPerBatch), fixed as a deployment's PARTS_PER_BATCH does; 0 lets the plan cut its batches for its workers")
	workBucket := fs.String("work-bucket", "", "`bucket` for plans and temporary objects (default: the destination bucket)")
	overwrite := fs.Bool("overwrite", false, "replace an existing archive")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log every step")
	stateMachine := fs.String("state-machine", "", "`ARN` of the deployed state machine: start an execution there and follow it")
	presign := presignFlag(fs)
	if err := fs.parse(args, stdout); err != nil {
		return err
	}
	linkLife, err := presignExpiry("create", fs, *presign)
	if err != nil {
		return err
	}
	if err := rf.check("create"); err != nil {
		return err
	}
	if err := atLeast("create", "batch", *batch, 0); err != nil {
		return err
	}
	req, err := rf.sourceRequest("create")
	if err != nil {
		return err
	}
	if *dest == "" {
		return usageErrorf("create: --dest s3://bucket/key.zip is missing")
	}
	b, k, err := parseS3URI(*dest)
	if err != nil {
		return usageErrorf("create: --dest: %v", err)
	}
	req.Destination = workflow.Destination{Bucket: b, Key: k}
	req.Options.Overwrite = *overwrite
	if err := req.Validate(); err != nil {
		return inFlagTerms(err)
	}
	if *stateMachine != "" { // typed empty, parse refused it
		// The deployment's own default concurrency applies unless --workers is
		// given or the account's Lambda concurrency is below it (fitToAccount).
		if !fs.given("workers") {
			req.Options.MaxConcurrency = 0
		}
		return startDeployed(ctx, *stateMachine, req, *asJSON, linkLife, stdout, stderrWriter)
	}
	if *workBucket == "" {
		*workBucket = b
	}
	client, err := connect(ctx, "create", *rf.endpoint, runChecks(req, *workBucket)...)
	if err != nil {
		return err
	}
	plain := client // housekeeping (run marker, dead runs) stays out of the request counts
	counter := s3metrics.New()
	client = s3.New(client.Options(), counter.Option())

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(quietOnInterrupt{ctx, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})})
	progress := newProgressPrinter(os.Stderr)
	runner := &workflow.Runner{
		S3:         client,
		Config:     workflow.Config{WorkBucket: *workBucket, DefaultMaxConcurrency: *rf.workers, PartsPerBatch: *batch},
		Log:        log,
		OnProgress: progress.update,
	}
	raw, _ := json.Marshal(req)
	start := time.Now()
	execution := fmt.Sprintf("local-%s", start.UTC().Format("20060102T150405.000000000"))
	lease := startRun(ctx, plain, *workBucket, execution, req.Destination)
	res, err := runner.Run(ctx, raw, execution)
	progress.finish(err)
	lease.stop(ctx)
	if err != nil {
		if _, ok := interrupted(ctx); ok {
			var job *workflow.Job
			if res != nil {
				job = res.Job
			}
			return interruptedCreate(ctx, plain, *workBucket, execution, job)
		}
		return inFlagTerms(err)
	}
	wall := time.Since(start)
	out := res.Output
	var l *links
	if linkLife > 0 {
		var warning string
		if l, warning, err = signLinks(ctx, plain, out.Archive.URI, out.Report, linkLife); err != nil {
			return fmt.Errorf("create: the archive %s is complete, but its link was not signed: %w", out.Archive.URI, err)
		}
		if warning != "" {
			out.Warnings = append(out.Warnings, warning)
		}
	}
	printWarnings(out.Warnings)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"archive": out.Archive, "report": out.Report, "stats": out.Stats, "warnings": append([]string{}, out.Warnings...),
			"requests": counter.Snapshot(), "wallSeconds": wall.Seconds(), "links": l})
	}
	st := out.Stats
	printArchive(stdout, out.Archive, st)
	fmt.Fprintf(stdout, "parts       %d (%d upload, %d copy, %d chain in %d rounds)\n", st.Parts, st.UploadParts, st.CopyParts, st.ChainParts, st.ChainRounds)
	var reqs []string
	for _, c := range counter.Sorted() {
		reqs = append(reqs, fmt.Sprintf("%d %s", c.N, c.Op))
	}
	fmt.Fprintf(stdout, "requests    %d: %s\n", counter.Total(), strings.Join(reqs, ", "))
	if n := counter.Snapshot()["AbortMultipartUpload"]; n > 0 {
		fmt.Fprintf(stdout, "            (%d AbortMultipartUpload: %s)\n", n, abortReason)
	}
	fmt.Fprintf(stdout, "report      %s\n", reportOrWhy(out.Report))
	printLinks(stdout, l)
	fmt.Fprintf(stdout, "wall time   %.2f s%s\n", wall.Seconds(), rate(out.Archive.Size, wall.Seconds()))
	return nil
}

// printArchive is the summary's first lines, the same for a run here and
// a deployed one: what was made and how it was built.
func printArchive(w io.Writer, a workflow.Archive, st workflow.ReportStats) {
	fmt.Fprintf(w, "archive     %s\n", a.URI)
	fmt.Fprintf(w, "entries     %d\n", st.Entries)
	fmt.Fprintf(w, "size        %s (%d bytes)%s, CRC-32 %s\n", humanBytes(a.Size), a.Size, map[bool]string{true: ", ZIP64"}[st.Zip64], a.CRC32)
	fmt.Fprintf(w, "copied      %s server-side\n", humanBytes(st.CopiedBytesActual))
	fmt.Fprintf(w, "streamed    %s through workers\n", humanBytes(st.StreamedBytesActual))
}

// abortReason says why a run that succeeded aborted uploads: the planner
// and the workers have S3 compute CRC-32s by copying ranges into scratch
// uploads they never complete (workflow.crcProbe, a batch's probe upload),
// and abort them when they are done.
const abortReason = "the planner's and workers' scratch uploads for learning CRC-32s, discarded when done; not a failure"

func endpointOrEnv(endpoint string) string {
	if endpoint == "" {
		return endpointFromEnv()
	}
	return endpoint
}

// runChecks are the buckets a run needs: the source (listed) or the
// manifest or inventory report (read), the destination and the work bucket.
func runChecks(req workflow.Request, workBucket string) []bucketCheck {
	var checks []bucketCheck
	if m := req.Source.Manifest; m != nil {
		checks = append(checks, bucketCheck{role: "manifest", bucket: m.Bucket, object: m.Key})
	} else if inv := req.Source.Inventory; inv != nil {
		checks = append(checks, bucketCheck{role: "inventory", bucket: inv.Bucket, object: inv.Key})
	} else {
		checks = append(checks, bucketCheck{role: "source", bucket: req.Source.Bucket, list: true, prefix: req.Source.Prefix})
	}
	checks = append(checks, bucketCheck{role: "destination", bucket: req.Destination.Bucket})
	if workBucket != "" {
		checks = append(checks, bucketCheck{role: "work", bucket: workBucket})
	}
	return checks
}
