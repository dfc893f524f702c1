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

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/plan"
)

func runCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs, cf := newCreateFlags()
	if err := fs.parse(args, stdout); err != nil {
		return err
	}
	linkLife, err := presignExpiry("create", fs, *cf.presign)
	if err != nil {
		return err
	}
	req, err := cf.request()
	if err != nil {
		return err
	}
	if cf.keepFor, err = parseKeep("create", *cf.keep); err != nil {
		return err
	}
	show := resultOutput{stdout: stdout, asJSON: *cf.asJSON, linkLife: linkLife}
	if *cf.stateMachine != "" { // typed empty, parse refused it
		if *cf.model != "" {
			return usageErrorf("create: --model prices a run here; a deployed planner prices with AWS's profile (drop --model, or --state-machine)")
		}
		if fs.given("keep") {
			return usageErrorf("create: --keep keeps a run here; a deployed workflow keeps a failed run for its construct's keepFailedRunsFor (drop --keep, or --state-machine)")
		}
		// The deployment's own default concurrency applies unless --workers is
		// given or fitToAccount finds the account's Lambda concurrency below it.
		if !fs.given("workers") {
			req.Options.MaxConcurrency = 0
		}
		return startDeployed(ctx, *cf.stateMachine, req, show)
	}
	return cf.runHere(ctx, req, show)
}

// createFlags are create's flags beside the request flags it shares with plan.
type createFlags struct {
	rf                             *requestFlags
	dest, workBucket, stateMachine *string
	model                          *string
	modelChoice                    modelChoice // --model, parsed
	batch                          *int
	overwrite, asJSON, verbose     *bool
	presign                        *string
	keep                           *string
	keepFor                        time.Duration // --keep, parsed
}

func newCreateFlags() (*flags, *createFlags) {
	fs := newFlags("create", "s3zip create (--source s3://bucket/prefix/ | --manifest s3://bucket/key | --inventory s3://bucket/…/manifest.json) --dest s3://bucket/out.zip [flags]",
		"Build a ZIP archive of S3 objects in S3: the Step Functions workflow (plan, build parts, finalize),\n"+
			"run from here against any S3 endpoint. Nothing is left behind on failure: the upload is aborted\n"+
			"and the work objects removed. A report (<dest>.report.json) lists every entry.")
	return fs, &createFlags{
		rf:           addRequestFlags(fs, "archive the objects a CSV or JSON Lines manifest at `s3://bucket/key` lists (instead of --source); lines without a bucket name objects in the manifest's bucket"),
		dest:         fs.String("dest", "", "write the archive to `s3://bucket/key.zip`"),
		batch:        fs.Int("batch", 0, "part jobs per batch (the Map's MaxItemsPerBatch), fixed as a deployment's PARTS_PER_BATCH does; 0 lets the plan cut its batches for its workers"),
		workBucket:   fs.String("work-bucket", "", "`bucket` for plans and temporary objects (default: the destination bucket)"),
		overwrite:    fs.Bool("overwrite", false, "replace an existing archive"),
		asJSON:       fs.Bool("json", false, "print the result as JSON"),
		verbose:      fs.Bool("v", false, "log every step"),
		stateMachine: fs.String("state-machine", "", "`ARN` of the deployed state machine: start an execution there and follow it"),
		model:        fs.String("model", "", modelHelp),
		presign:      presignFlag(fs),
		keep:         keepFlag(fs),
	}
}

// request is the workflow request the flags describe, checked as the
// planner checks it.
func (cf *createFlags) request() (create.Request, error) {
	if err := cf.rf.check("create"); err != nil {
		return create.Request{}, err
	}
	if err := atLeast("create", "batch", *cf.batch, 0); err != nil {
		return create.Request{}, err
	}
	req, err := cf.rf.sourceRequest("create")
	if err != nil {
		return create.Request{}, err
	}
	if *cf.dest == "" {
		return create.Request{}, usageErrorf("create: --dest s3://bucket/key.zip is missing")
	}
	b, k, err := parseS3URI(*cf.dest)
	if err != nil {
		return create.Request{}, usageErrorf("create: --dest: %v", err)
	}
	if k == "" || strings.HasSuffix(k, "/") {
		return create.Request{}, usageErrorf("create: --dest %s names a bucket or a folder, not an archive: give the archive's key, e.g. s3://%s/%sarchive.zip", *cf.dest, b, k)
	}
	req.Destination = create.Destination{Bucket: b, Key: k}
	req.Options.Overwrite = *cf.overwrite
	if cf.modelChoice, err = parseModel(*cf.model); err != nil {
		return create.Request{}, err
	}
	if err := req.Validate(); err != nil {
		return create.Request{}, inFlagTerms(err)
	}
	return req, nil
}

// runHere runs the workflow's handlers here, as the state machine would,
// keeping this run's marker while it lasts, and removing what dead runs for
// the same destination left.
func (cf *createFlags) runHere(ctx context.Context, req create.Request, show resultOutput) error {
	workBucket := *cf.workBucket
	if workBucket == "" {
		workBucket = req.Destination.Bucket
	}
	client, err := connect(ctx, "create", *cf.rf.endpoint, runChecks(req, workBucket)...)
	if err != nil {
		return err
	}
	plain := client // housekeeping of the run marker and dead runs stays out of the request counts
	model, measured, err := cf.modelChoice.resolve(ctx, endpointOrEnv(*cf.rf.endpoint), plain, workBucket)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	counter := s3metrics.New()
	progress := newProgressPrinter(os.Stderr)
	runner := &create.Runner{
		S3:         s3.New(client.Options(), counter.Option()),
		Config:     create.Config{WorkBucket: workBucket, DefaultMaxConcurrency: *cf.rf.workers, PartsPerBatch: *cf.batch, Model: model},
		Log:        cf.logger(ctx),
		OnProgress: progress.update,
		Keep:       cf.keepFor,
	}
	raw, _ := json.Marshal(req)
	start := time.Now()
	execution := fmt.Sprintf("local-%s", start.UTC().Format("20060102T150405.000000000"))
	lease := startRun(ctx, plain, workBucket, execution, req.Destination)
	res, err := runner.Run(ctx, raw, execution)
	progress.finishRun(ctx, err)
	if kept := lease.end(ctx, err); kept != nil {
		return keptRun(kept, workBucket, clientEndpoint(plain))
	}
	if err != nil {
		if _, ok := interrupted(ctx); ok {
			var job *create.Job
			if res != nil {
				job = res.Job
			}
			return interruptedCreate(ctx, plain, workBucket, execution, job)
		}
		return inFlagTerms(err)
	}
	made := createdHere{out: *res.Output, counter: counter, wall: time.Since(start), profile: measured, compress: req.Options.Compression}
	if err := made.sign(ctx, plain, show.linkLife); err != nil {
		return err
	}
	return made.print(show)
}

// logger logs warnings, and every step with -v; quiet once interrupted.
func (cf *createFlags) logger(ctx context.Context) *slog.Logger {
	level := slog.LevelWarn
	if *cf.verbose {
		level = slog.LevelInfo
	}
	return slog.New(quietOnInterrupt{ctx, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})})
}

// createdHere is what a create run here made, and what it took.
type createdHere struct {
	out      create.FinalizeOutput
	links    *links // with --presign
	counter  *s3metrics.Counter
	wall     time.Duration
	profile  string // the server measured for auto's choices, when it was
	compress string // --compress, for what the summary says when nothing shrank
}

// sign signs links to the archive and its report for linkLife, and none when
// linkLife is 0.
func (c *createdHere) sign(ctx context.Context, client *s3.Client, linkLife time.Duration) error {
	if linkLife <= 0 {
		return nil
	}
	l, warning, err := signRunLinks(ctx, client, &c.out, linkLife)
	if err != nil {
		return fmt.Errorf("create: the archive %s is complete, but its link was not signed: %w", c.out.Archive.URI, err)
	}
	c.links = l
	if warning != "" {
		c.out.Warnings = append(c.out.Warnings, warning)
	}
	return nil
}

// print shows the warnings on stderr and the result on show.stdout.
func (c *createdHere) print(show resultOutput) error {
	out, w := c.out, show.stdout
	printWarnings(out.Warnings)
	if show.asJSON {
		return printJSON(w, map[string]any{"archive": out.Archive, "archives": out.Archives, "report": out.Report, "stats": out.Stats, "warnings": append([]string{}, out.Warnings...),
			"requests": c.counter.Snapshot(), "wallSeconds": c.wall.Seconds(), "links": c.links, "profileMeasured": c.profile})
	}
	st := out.Stats
	printArchive(w, out.Archive, out.Archives, st, c.compress)
	fmt.Fprintf(w, "parts       %d (%d upload, %d copy, %d chain in %d rounds)\n", st.Parts, st.UploadParts, st.CopyParts, st.ChainParts, st.ChainRounds)
	printRequests(w, c.counter)
	if n := c.counter.Snapshot()["AbortMultipartUpload"]; n > 0 {
		fmt.Fprintf(w, "            (%d AbortMultipartUpload: %s)\n", n, abortReason)
	}
	fmt.Fprintf(w, "report      %s\n", reportOrWhy(out.Report))
	printLinks(w, c.links)
	if c.profile != "" {
		fmt.Fprintf(w, "profile     %s\n", c.profile)
	}
	fmt.Fprintf(w, "wall time   %.2f s%s\n", c.wall.Seconds(), rate(st.ArchiveBytes, c.wall.Seconds()))
	return nil
}

// printRequests is the summary's line of S3 requests, by API, most first.
func printRequests(w io.Writer, counter *s3metrics.Counter) {
	var reqs []string
	for _, c := range counter.Sorted() {
		reqs = append(reqs, fmt.Sprintf("%d %s", c.N, c.Op))
	}
	fmt.Fprintf(w, "requests    %d: %s\n", counter.Total(), strings.Join(reqs, ", "))
}

// printArchive prints the summary's first lines, the same for a run here and
// a deployed one. They say what was made and how it was built; compress is
// the request's options.compression.
func printArchive(w io.Writer, a create.Archive, split []create.Archive, st create.ReportStats, compress string) {
	if split != nil {
		fmt.Fprintf(w, "archives    %d, each a whole ZIP\n", len(split))
		for _, a := range split {
			fmt.Fprintf(w, "  %s  %s, %s, CRC-32 %s\n", a.URI, humanBytes(a.Size), count(a.Entries, "entry", "entries"), a.CRC32)
		}
		fmt.Fprintf(w, "entries     %d\n", st.Entries)
		fmt.Fprintf(w, "size        %s (%d bytes) together%s\n", humanBytes(st.ArchiveBytes), st.ArchiveBytes, map[bool]string{true: ", ZIP64 in some"}[st.Zip64])
	} else {
		fmt.Fprintf(w, "archive     %s\n", a.URI)
		fmt.Fprintf(w, "entries     %d\n", st.Entries)
		fmt.Fprintf(w, "size        %s (%d bytes)%s, CRC-32 %s\n", humanBytes(a.Size), a.Size, map[bool]string{true: ", ZIP64"}[st.Zip64], a.CRC32)
	}
	fmt.Fprintf(w, "copied      %s server-side\n", humanBytes(st.CopiedBytesActual))
	fmt.Fprintf(w, "streamed    %s through workers\n", humanBytes(st.StreamedBytesActual))
	if line := compressionSaved(st.Stats, compress); line != "" {
		fmt.Fprintf(w, "compressed  %s\n", line)
	}
}

// compressionSaved says what DEFLATE saved, as the entries compressed and
// their bytes before and after. When compression was asked for and no entry
// was compressed, it says that none was and why. It is empty when
// compression was not asked for.
func compressionSaved(st plan.Stats, compress string) string {
	if st.DeflatedEntries == 0 {
		switch compress {
		case create.CompressAuto:
			return "none: every entry is STORED (--compress auto skips compressed formats, known by extension or magic bytes, and entries whose first 256 KiB shrink by less than 10%)"
		case create.CompressDeflate:
			return "none: every entry is STORED (DEFLATE shrank none of them)"
		}
		return ""
	}
	saved := st.DeflatedRawBytes - st.DeflatedBytes
	pct := 0.0
	if st.DeflatedRawBytes > 0 {
		pct = 100 * float64(saved) / float64(st.DeflatedRawBytes)
	}
	return fmt.Sprintf("%s DEFLATEd: %s to %s, %s saved (%.1f%%)", count(st.DeflatedEntries, "entry", "entries"),
		humanBytes(st.DeflatedRawBytes), humanBytes(st.DeflatedBytes), humanBytes(saved), pct)
}

// abortReason says why a run that succeeded aborted uploads. The
// planner's probe upload (crcProbe in create/crc.go) and a batch's have S3 compute CRC-32s by
// copying ranges into scratch uploads they never complete, and abort them
// when they are done.
const abortReason = "the planner's and workers' scratch uploads for learning CRC-32s, discarded when done; not a failure"

func endpointOrEnv(endpoint string) string {
	if endpoint == "" {
		return endpointFromEnv()
	}
	return endpoint
}

// runChecks returns the buckets a run needs. Those are the source it lists
// or the manifest or inventory report it reads, the destination and the
// work bucket.
func runChecks(req create.Request, workBucket string) []bucketCheck {
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
