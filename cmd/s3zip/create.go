package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/workflow"
)

func init() {
	register(command{"create", "build an archive: the whole workflow, run from here against any S3 endpoint", runCreate})
}

func runCreate(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	source := fs.String("source", "", "s3://bucket/prefix/ to archive")
	manifestURI := fs.String("manifest", "", "s3://bucket/key of a CSV or JSON Lines manifest (instead of --source)")
	dest := fs.String("dest", "", "s3://bucket/key.zip to write")
	strategy := fs.String("strategy", "", "stream or duo (default duo)")
	workers := fs.Int("workers", 8, "batches built at once (the Distributed Map's MaxConcurrency)")
	batch := fs.Int("batch", 4, "part jobs per batch (the Map's MaxItemsPerBatch)")
	endpoint := fs.String("endpoint", "", "S3 endpoint URL (default: AWS, or $S3_ENDPOINT)")
	workBucket := fs.String("work-bucket", "", "bucket for plans and temporary objects (default: the destination bucket)")
	names := fs.String("names", "", "relative, flat or full")
	duplicates := fs.String("duplicates", "", "error or suffix")
	directories := fs.Bool("directories", false, "add directory entries for folder paths")
	overwrite := fs.Bool("overwrite", false, "replace an existing archive")
	partSize := fs.Int64("part-size", 0, "target size of streamed parts in bytes (default 16 MiB)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log every step")
	stateMachine := fs.String("state-machine", "", "ARN of the deployed state machine: start an execution there and follow it (sfn.go)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("create: unexpected argument %q", fs.Arg(0))
	}
	req := workflow.Request{Options: workflow.Options{
		Strategy: *strategy, Names: *names, Duplicates: *duplicates, Directories: *directories,
		Overwrite: *overwrite, MaxConcurrency: *workers, PartSize: *partSize,
	}}
	switch {
	case *source != "" && *manifestURI == "":
		b, k, err := parseS3URI(*source)
		if err != nil {
			return fmt.Errorf("create: --source: %w", err)
		}
		req.Source = workflow.Source{Bucket: b, Prefix: k}
	case *manifestURI != "" && *source == "":
		b, k, err := parseS3URI(*manifestURI)
		if err != nil {
			return fmt.Errorf("create: --manifest: %w", err)
		}
		req.Source = workflow.Source{Manifest: &workflow.ObjectRef{Bucket: b, Key: k}}
	default:
		return fmt.Errorf("create: give exactly one of --source s3://bucket/prefix/ or --manifest s3://bucket/key")
	}
	b, k, err := parseS3URI(*dest)
	if err != nil {
		return fmt.Errorf("create: --dest: %w", err)
	}
	req.Destination = workflow.Destination{Bucket: b, Key: k}
	if err := req.Validate(); err != nil {
		return err
	}
	if *stateMachine != "" {
		// The deployment's own default concurrency applies unless --workers is given.
		workersSet := false
		fs.Visit(func(f *flag.Flag) { workersSet = workersSet || f.Name == "workers" })
		if !workersSet {
			req.Options.MaxConcurrency = 0
		}
		return startDeployed(ctx, *stateMachine, req, *asJSON, stdout, stderrWriter)
	}
	if *workBucket == "" {
		*workBucket = b
	}
	client, err := newS3Client(ctx, *endpoint)
	if err != nil {
		return err
	}
	counter := s3metrics.New()
	client = s3.New(client.Options(), counter.Option())

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	progress := newProgressPrinter(os.Stderr)
	runner := &workflow.Runner{
		S3:            client,
		Config:        workflow.Config{WorkBucket: *workBucket, DefaultMaxConcurrency: *workers},
		Log:           log,
		PartsPerBatch: *batch,
		OnProgress:    progress.update,
	}
	raw, _ := json.Marshal(req)
	start := time.Now()
	res, err := runner.Run(ctx, raw, fmt.Sprintf("local-%s", start.UTC().Format("20060102T150405.000000000")))
	progress.done()
	if err != nil {
		return err
	}
	wall := time.Since(start)
	out := res.Output
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"archive": out.Archive, "report": out.Report, "stats": out.Stats, "requests": counter.Snapshot(), "wallSeconds": wall.Seconds()})
	}
	st := out.Stats
	fmt.Fprintf(stdout, "archive     %s\n", out.Archive.URI)
	fmt.Fprintf(stdout, "entries     %d\n", st.Entries)
	fmt.Fprintf(stdout, "size        %s (%d bytes)%s, CRC-32 %s\n", humanBytes(out.Archive.Size), out.Archive.Size, map[bool]string{true: ", ZIP64"}[st.Zip64], out.Archive.CRC32)
	fmt.Fprintf(stdout, "copied      %s server-side\n", humanBytes(st.CopiedBytesActual))
	fmt.Fprintf(stdout, "streamed    %s through workers\n", humanBytes(st.StreamedBytesActual))
	fmt.Fprintf(stdout, "parts       %d (%d upload, %d copy, %d chain in %d rounds)\n", st.Parts, st.UploadParts, st.CopyParts, st.ChainParts, st.ChainRounds)
	var reqs []string
	for _, c := range counter.Sorted() {
		reqs = append(reqs, fmt.Sprintf("%d %s", c.N, c.Op))
	}
	fmt.Fprintf(stdout, "requests    %d: %s\n", counter.Total(), strings.Join(reqs, ", "))
	fmt.Fprintf(stdout, "report      %s\n", out.Report)
	fmt.Fprintf(stdout, "wall time   %.2f s (%.1f MiB/s of archive)\n", wall.Seconds(), float64(out.Archive.Size)/(1<<20)/wall.Seconds())
	return nil
}

// progressPrinter draws a live bar on a terminal and plain lines elsewhere.
type progressPrinter struct {
	w        io.Writer
	terminal bool
	start    time.Time
	mu       sync.Mutex
	last     time.Time
	drawn    bool
}

func newProgressPrinter(f *os.File) *progressPrinter {
	fi, err := f.Stat()
	return &progressPrinter{w: f, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0, start: time.Now()}
}

func (p *progressPrinter) update(pr workflow.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	final := pr.PartsDone == pr.Parts
	if !final && now.Sub(p.last) < map[bool]time.Duration{true: 100 * time.Millisecond, false: 2 * time.Second}[p.terminal] {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start).Seconds()
	rate := float64(pr.BytesDone) / max(elapsed, 1e-3)
	eta := "?"
	if rate > 0 {
		eta = fmt.Sprintf("%.0fs", float64(pr.Bytes-pr.BytesDone)/rate)
	}
	if !p.terminal {
		fmt.Fprintf(p.w, "parts %d/%d, %s of %s, %s/s, ETA %s\n", pr.PartsDone, pr.Parts, humanBytes(pr.BytesDone), humanBytes(pr.Bytes), humanBytes(int64(rate)), eta)
		return
	}
	const width = 30
	filled := 0
	if pr.Bytes > 0 {
		filled = int(float64(width) * float64(pr.BytesDone) / float64(pr.Bytes))
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d parts  %s / %s  %s/s  ETA %s   ", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		pr.PartsDone, pr.Parts, humanBytes(pr.BytesDone), humanBytes(pr.Bytes), humanBytes(int64(rate)), eta)
	p.drawn = true
}

func (p *progressPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
	}
}
