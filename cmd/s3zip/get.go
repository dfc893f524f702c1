package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/zipread"
)

// minGetPartSize is the smallest ranged GET get makes. Below it a request's
// round trip, not the link, sets the pace.
const minGetPartSize = 1 << 20

func runGet(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("get", "s3zip get s3://bucket/archive.zip DIR [--endpoint URL] [--concurrency N] [--part-size SIZE] [--overwrite] [--skip-symlinks]",
		"Download the archive with parallel ranged GETs and extract it under DIR, checking every entry's CRC-32.\n"+
			"Names that would leave DIR are refused. Symbolic links are never created (their targets could point\n"+
			"anywhere): an archive holding one is refused unless --skip-symlinks leaves them out.")
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint `URL` (default $S3_ENDPOINT or $AWS_ENDPOINT_URL_S3)")
	concurrency := fs.Int("concurrency", zipread.DefaultConcurrency, "ranged GETs at once")
	// The part size of 32 MiB is what make bench-get's tuning chose for s3zip
	// get on one Lambda-sized link in every run, and on the unshaped path
	// most often.
	partSize := sizeFlag(fs, "part-size", 32<<20, "`size` of a ranged GET (bytes, or 1MiB to 5GiB): STORED entries larger than this are read in parts of this size, in parallel, and neighbouring smaller entries are read together up to it")
	overwrite := fs.Bool("overwrite", false, "replace files that already exist")
	skipSymlinks := fs.Bool("skip-symlinks", false, "leave out symbolic link entries (and say how many) instead of refusing the archive")
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	if err := wantArgs("get", pos, "s3://bucket/archive.zip", "DIR"); err != nil {
		return err
	}
	if err := atLeast("get", "concurrency", *concurrency, 1); err != nil {
		return err
	}
	if msg := sizeOutOfRange("part-size", *partSize, minGetPartSize, s3part.MaxPartSize); msg != "" {
		return usageErrorf("get: %s", msg)
	}
	bucket, key, err := parseS3ObjectURI(pos[0])
	if err != nil {
		return usageErrorf("get: %v", err)
	}
	client, err := connect(ctx, "get", *endpoint, bucketCheck{role: "archive", bucket: bucket, object: key})
	if err != nil {
		return err
	}
	start := time.Now()
	a, err := zipread.Open(ctx, client, bucket, key)
	if err != nil {
		return openError("get", bucket, key, err)
	}
	res, err := a.Extract(ctx, pos[1], zipread.ExtractOptions{Concurrency: *concurrency, ChunkSize: *partSize,
		CoalesceSize: *partSize, Overwrite: *overwrite, SkipSymlinks: *skipSymlinks})
	if errors.Is(err, zipread.ErrSymlink) {
		return fmt.Errorf("%w; add --skip-symlinks to extract everything else", err)
	}
	if errors.Is(err, os.ErrExist) { // found before any file was written
		msg, _, _ := strings.Cut(err.Error(), " (ExtractOptions.Overwrite")
		return usageErrorf("get: %s in %s; add --overwrite to replace what is there", msg, pos[1])
	}
	if err != nil {
		if _, ok := interrupted(ctx); ok {
			return &interruptedError{"interrupted; files extracted whole are kept, the partly written ones removed"}
		}
		return err
	}
	secs := time.Since(start).Seconds()
	skipped := ""
	if res.SkippedSymlinks > 0 {
		skipped = ", " + count(res.SkippedSymlinks, "symbolic link", "symbolic links") + " skipped"
	}
	_, err = fmt.Fprintf(stdout, "extracted %s (%s, %s%s), %d bytes to %s in %.2f s%s\n",
		count(res.Entries, "entry", "entries"), count(res.Files, "file", "files"), count(res.Dirs, "directory", "directories"), skipped, res.Bytes, pos[1], secs, rate(res.Bytes, secs))
	return err
}

// openError says plainly that the archive is missing, where the SDK's
// answer to a HEAD is a bare "NotFound:".
func openError(cmd, bucket, key string, err error) error {
	if s3err.NotFound(err) {
		return fmt.Errorf("%s: s3://%s/%s does not exist (HeadObject answered 404); check the bucket, the key and --endpoint", cmd, bucket, key)
	}
	return err
}

// rate returns a throughput such as " (12.3 MiB/s)", every command's unit
// for it, or "" when too few bytes moved for the figure to mean anything.
func rate(bytes int64, secs float64) string {
	if secs <= 0 || bytes < 1<<20 {
		return ""
	}
	r := float64(bytes) / (1 << 20) / secs
	if r < 1 {
		return fmt.Sprintf(" (%.2f MiB/s)", r)
	}
	return fmt.Sprintf(" (%.1f MiB/s)", r)
}
