package main

import (
	"context"
	"io"
)

// command is one subcommand: its name, its line in `s3zip help` ("" keeps
// plumbing out of it), and its handler.
type command struct {
	name, usage string
	run         func(ctx context.Context, args []string, stdout io.Writer) error
}

// commands is every subcommand, in the order a user meets them, which is
// the order `s3zip help` lists them in: build an archive (here, or follow
// the deployed workflow's run), price one before building it, check it,
// download it or hand out a link to it, unpack one in S3, continue a run kept after a failure, clear up after a
// killed run; then a data set to try it all on, and the version.
var commands = []command{
	{"create", "build an archive: the whole workflow, run from here against any S3 endpoint", runCreate},
	{"status", "follow an execution of the deployed workflow: status EXECUTION_ARN", runStatus},
	{"plan", "show what an archive's plan costs before anything runs", runPlan},
	{"verify", "check every record and CRC-32 of an archive in S3", runVerify},
	{"get", "download an archive in S3 and extract it to a directory", runGet},
	{"presign", "print a download link (presigned GET URL) of an object: presign s3://bucket/key", runPresign},
	{"extract", "unpack an archive in S3 into objects under a prefix, server-side where it can be", runExtract},
	{"resume", "continue a run that failed for a cause a retry may mend and was kept (--keep): resume RUN", runResume},
	{"cleanup", "remove what a killed create or extract left for an archive (work objects, multipart uploads, an extract's objects)", runCleanup},
	{"sample", "upload a synthetic data set (for demos and benchmarks)", runSample},
	{"version", "print the version, commit and Go release s3zip was built from", runVersion},
	{"batch", "", runBatch}, // the worker Lambda as a process, for the benchmark
}

func runVersion(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("version", "s3zip version", "Print the version s3zip was built as (or the module version), its commit and Go release.")
	if err := fs.parse(args, stdout); err != nil {
		return err
	}
	return printVersion(stdout)
}
