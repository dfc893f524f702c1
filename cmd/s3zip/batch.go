package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3metrics"
)

// BatchStats is what `s3zip batch --stats` prints on stderr as one JSON line
// when the batch succeeded.
type BatchStats struct {
	Requests     map[string]int64 `json:"requests"`
	PeakRSSBytes int64            `json:"peakRSSBytes"`
}

// BatchError is what `s3zip batch` prints on stderr as one JSON line when the
// batch failed, in the shape of a Lambda function error, so the caller can
// retry the same error types the state machine retries.
type BatchError struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

// runBatch runs the worker Lambda as a process. The benchmark runs one per
// Distributed Map batch, each in its own bandwidth-capped network namespace,
// as bench/README.md describes. It has no line in `s3zip help`, as it is
// plumbing, not a user command.
func runBatch(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("batch", "s3zip batch [--endpoint URL] [--stats] [-v] < BATCH_INPUT.json",
		"Build one Distributed Map batch of part jobs (a create.BatchInput JSON document on stdin) as the\n"+
			"worker Lambda does, and print its result on stdout. Plumbing for the benchmark (bench/README.md).")
	var opts batchOptions
	fs.StringVar(&opts.endpoint, "endpoint", "", "S3 endpoint URL (default: AWS, or $S3_ENDPOINT)")
	fs.BoolVar(&opts.stats, "stats", false, "print requests by API and peak memory as a JSON line on stderr")
	fs.BoolVar(&opts.verbose, "v", false, "log every part")
	if err := fs.parse(args, stdout); err != nil {
		return err
	}
	err := buildBatch(ctx, os.Stdin, stdout, opts)
	if err != nil {
		line, _ := json.Marshal(BatchError{ErrorType: create.ErrorType(err), ErrorMessage: err.Error()})
		fmt.Fprintf(os.Stderr, "%s\n", line)
		os.Exit(1)
	}
	return nil
}

// batchOptions are `s3zip batch`'s flags.
type batchOptions struct {
	endpoint       string // S3's, "" for the default
	stats, verbose bool
}

// buildBatch builds the batch stdin holds and writes its output to stdout.
func buildBatch(ctx context.Context, stdin io.Reader, stdout io.Writer, opts batchOptions) error {
	var in create.BatchInput
	dec := json.NewDecoder(stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return fmt.Errorf("batch: stdin is not a create.BatchInput JSON document: %w", err)
	}
	client, err := newS3Client(ctx, opts.endpoint)
	if err != nil {
		return err
	}
	counter := s3metrics.New()
	client = s3.New(client.Options(), counter.Option())
	level := slog.LevelWarn
	if opts.verbose {
		level = slog.LevelDebug
	}
	w := &create.Worker{
		S3:     client,
		Config: create.Config{WorkBucket: in.BatchInput.Job.WorkBucket},
		Log:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	out, err := w.Handle(ctx, in)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		return fmt.Errorf("batch: write result: %w", err)
	}
	if opts.stats {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		line, _ := json.Marshal(BatchStats{Requests: counter.Snapshot(), PeakRSSBytes: ru.Maxrss * 1024}) // KiB on Linux
		fmt.Fprintf(os.Stderr, "%s\n", line)
	}
	return nil
}
