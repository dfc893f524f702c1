package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/s3zip/s3zip/zipread"
)

func runVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("verify", "s3zip verify s3://bucket/archive.zip [--endpoint URL] [--concurrency N] [--json]",
		"Read the archive with ranged GETs and check every record and every entry's CRC-32 against its data.\n"+
			"Exits 0 when the archive is sound, 1 when it has problems (each listed) or is not a ZIP it can read,\n"+
			"2 when it does not exist (or the command line is wrong), 3 when S3 cannot be reached.\n"+
			"Warnings (listed after the problems) name what 7-Zip, Info-ZIP and Go's archive/zip read correctly\n"+
			"but other readers, or get and extract, treat differently; they leave the exit code 0.")
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint `URL` (default $S3_ENDPOINT or $AWS_ENDPOINT_URL_S3)")
	concurrency := fs.Int("concurrency", zipread.DefaultConcurrency, "ranged GETs at once")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	if err := wantArgs("verify", pos, "s3://bucket/archive.zip"); err != nil {
		return err
	}
	if err := atLeast("verify", "concurrency", *concurrency, 1); err != nil {
		return err
	}
	bucket, key, err := parseS3ObjectURI(pos[0])
	if err != nil {
		return usageErrorf("verify: %v", err)
	}
	client, err := connect(ctx, "verify", *endpoint, bucketCheck{role: "archive", bucket: bucket, object: key})
	if err != nil {
		return err
	}
	a, err := zipread.Open(ctx, client, bucket, key)
	var fe *zipread.FormatError
	if errors.As(err, &fe) {
		// An archive too broken to list is a verification result, not a
		// failure to verify, so report it the same way.
		r := &zipread.Report{Bucket: bucket, Key: key, Problems: []zipread.Problem{{Offset: fe.Offset, What: fe.What}}, Warnings: []zipread.Problem{}}
		if err := printReport(stdout, r, *asJSON); err != nil {
			return err
		}
		return fmt.Errorf("verify s3://%s/%s: not a readable ZIP archive: %s", bucket, key, fe.What)
	}
	if err != nil {
		return openError("verify", bucket, key, err)
	}
	r, err := a.Verify(ctx, zipread.VerifyOptions{Concurrency: *concurrency})
	if err != nil {
		return err
	}
	if err := printReport(stdout, r, *asJSON); err != nil {
		return err
	}
	if !r.OK() {
		return fmt.Errorf("verify s3://%s/%s: %s", bucket, key, count(len(r.Problems), "problem", "problems"))
	}
	return nil
}

func printReport(w io.Writer, r *zipread.Report, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem: %v (offset %d)\n", p, p.Offset)
	}
	for _, p := range r.Warnings {
		fmt.Fprintf(w, "warning: %v (offset %d)\n", p, p.Offset)
	}
	zip64 := "no"
	if r.Zip64 {
		zip64 = "yes"
	}
	secs := r.Elapsed.Seconds()
	_, err := fmt.Fprintf(w, "s3://%s/%s: %s (%s, %s, %d with ZIP64 fields, %d with data descriptors), ZIP64 end records: %s, %d bytes checked in %.2f s%s: ",
		r.Bucket, r.Key, count(r.Entries, "entry", "entries"), count(r.Files, "file", "files"), count(r.Dirs, "directory", "directories"), r.Zip64Entries, r.Descriptors, zip64, r.BytesChecked, secs, rate(r.BytesChecked, secs))
	if err != nil {
		return err
	}
	verdict := "OK"
	if !r.OK() {
		verdict = count(len(r.Problems), "problem", "problems")
	}
	if len(r.Warnings) > 0 {
		verdict += ", " + count(len(r.Warnings), "warning", "warnings")
	}
	_, err = fmt.Fprintln(w, verdict)
	return err
}
