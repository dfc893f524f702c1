package main

import (
	"context"
	"io"
)

// command is one subcommand with its name, its line in `s3zip help` and its
// handler. An empty line keeps plumbing out of the help.
type command struct {
	name, usage string
	run         func(ctx context.Context, args []string, stdout io.Writer) error
}

// commands is every subcommand, in the order a user meets them, which is
// the order `s3zip help` lists them in. A user builds an archive here or
// follows the deployed workflow's run, prices one before building it, checks
// it, downloads it or hands out a link to it, unpacks one in S3, continues a
// run kept after a failure and clears up after a killed run. A data set to
// try it all on and the version come last.
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
