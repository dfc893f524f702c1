package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/s3zip/s3zip/archive"
)

func init() {
	register(command{"get", "download an archive in S3 and extract it to a directory", runGet})
}

func runGet(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint URL (default $S3_ENDPOINT or $AWS_ENDPOINT_URL_S3)")
	concurrency := fs.Int("concurrency", archive.DefaultConcurrency, "ranged GETs at once")
	overwrite := fs.Bool("overwrite", false, "replace files that already exist")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: s3zip get s3://bucket/archive.zip DIR [--endpoint URL] [--concurrency N] [--overwrite]")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("get", pos, "s3://bucket/archive.zip", "DIR"); err != nil {
		return err
	}
	if *concurrency < 1 {
		return fmt.Errorf("get: --concurrency %d: want 1 or more", *concurrency)
	}
	bucket, key, err := parseS3ObjectURI(pos[0])
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	client, err := newS3Client(ctx, *endpoint)
	if err != nil {
		return err
	}
	start := time.Now()
	a, err := archive.Open(ctx, client, bucket, key)
	if err != nil {
		return err
	}
	res, err := a.Extract(ctx, pos[1], archive.ExtractOptions{Concurrency: *concurrency, Overwrite: *overwrite})
	if err != nil {
		if _, ok := interrupted(ctx); ok {
			return &interruptedError{"interrupted; files extracted whole are kept, the partly written ones removed"}
		}
		return err
	}
	secs := time.Since(start).Seconds()
	_, err = fmt.Fprintf(stdout, "extracted %d entries (%d files, %d directories), %d bytes to %s in %.2f s (%.1f MB/s)\n",
		res.Entries, res.Files, res.Dirs, res.Bytes, pos[1], secs, mbPerSec(res.Bytes, secs))
	return err
}
