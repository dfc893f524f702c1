package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// keepFlag is --keep, for create, extract and resume.
func keepFlag(fs *flags) *string {
	return fs.String("keep", "0", "when the run fails for a cause a retry may mend (S3 errors that outlast every retry), keep its upload and work objects for `DURATION` (e.g. 24h, 7d) so that `s3zip resume` can continue it; 0 aborts every failed run, and a failure no retry mends (a source changed, access refused, bad input) aborts whatever --keep says")
}

// maxKeep is the longest --keep, as an upload nobody resumes costs its
// parts' storage until then.
const maxKeep = 30 * 24 * time.Hour

// parseKeep reads --keep's duration, as a Go duration such as 90m or 24h or
// as whole days such as 7d.
func parseKeep(cmd, value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if days, ok := strings.CutSuffix(value, "d"); ok && err != nil {
		n, nerr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, nerr
	}
	if err != nil || d < 0 || d > maxKeep {
		return 0, usageErrorf("%s: --keep %q: want a duration from 0 to 30d, e.g. 24h or 7d", cmd, value)
	}
	return d, nil
}

// resumeCommand is the `s3zip resume` that continues a kept run, quoted
// for a shell.
func resumeCommand(execution, workBucket, endpoint string) string {
	args := []string{"s3zip", "resume", "--work-bucket", workBucket}
	if endpoint != "" {
		args = append(args, "--endpoint", endpoint)
	}
	return shellCommand(append(args, execution)...)
}

// keptRun returns the error a kept run ends with. It gives the cause, until
// when the run is kept, and the command that resumes it.
func keptRun(kept *stepfn.KeptError, workBucket, endpoint string) error {
	return fmt.Errorf("%w; continue it with: %s (or remove it now: s3zip cleanup --kept)", kept, resumeCommand(kept.Execution, workBucket, endpoint))
}

func runResume(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("resume", "s3zip resume RUN --work-bucket BUCKET [--endpoint URL] [--keep DURATION] [--json] [-v]",
		"Continue a run that failed for a cause a retry may mend and was kept (create --keep): only the\n"+
			"parts that were not built are built (the upload's ListParts says which are), then the archive\n"+
			"is finalized, as Step Functions' Redrive continues a deployed run. RUN is the name the failure printed.")
	endpoint := fs.String("endpoint", "", "S3 endpoint `URL` (default: AWS)")
	workBucket := fs.String("work-bucket", "", "the `bucket` the run kept its work in (the failure's message names it)")
	keep := keepFlag(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log every step")
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("resume: want one RUN, the kept run's name (usage: %s)", fs.synopsis)
	}
	if *workBucket == "" {
		return usageErrorf("resume: --work-bucket is missing: give the bucket the failed run kept its work in")
	}
	keepFor, err := parseKeep("resume", *keep)
	if err != nil {
		return err
	}
	execution := pos[0]
	client, err := connect(ctx, "resume", *endpoint, bucketCheck{role: "work", bucket: *workBucket})
	if err != nil {
		return err
	}
	if m, ok := keptExtract(ctx, client, *workBucket, execution); ok {
		return resumeExtract(ctx, client, m, extractResume{workBucket: *workBucket, keep: keepFor, asJSON: *asJSON}, stdout)
	}
	counter := s3metrics.New()
	progress := newProgressPrinter(os.Stderr)
	cf := createFlags{verbose: verbose}
	runner := &create.Runner{
		S3:         s3.New(client.Options(), counter.Option()),
		Config:     create.Config{WorkBucket: *workBucket},
		Log:        cf.logger(ctx),
		OnProgress: progress.update,
		Keep:       keepFor,
	}
	start := time.Now()
	lease := resumeRun(ctx, client, *workBucket, execution)
	res, stats, err := runner.Resume(ctx, execution)
	progress.finishRun(ctx, err)
	if kept := lease.end(ctx, err); kept != nil {
		return keptRun(kept, *workBucket, clientEndpoint(client))
	}
	if err != nil {
		if _, ok := interrupted(ctx); ok && res != nil {
			return interruptedCreate(ctx, client, *workBucket, execution, res.Job)
		}
		return inFlagTerms(err)
	}
	made := createdHere{out: *res.Output, counter: counter, wall: time.Since(start)}
	if *asJSON {
		return printJSON(stdout, map[string]any{"archive": made.out.Archive, "report": made.out.Report, "stats": made.out.Stats,
			"resume": stats, "requests": counter.Snapshot(), "wallSeconds": made.wall.Seconds()})
	}
	if err := made.print(resultOutput{stdout: stdout}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "resumed     from %s: %d of %d worker parts built now (%d of them built twice), %d were built before; %d batches run, %d kept\n",
		stats.FailedState, stats.Built, stats.Parts, stats.Rebuilt, stats.Listed, stats.BatchesRun, stats.BatchesKept)
	return nil
}

// resumeRun writes the marker of a resumed run and keeps it while the resume
// lasts. The marker is the kept run's own, with the destination its job
// names.
func resumeRun(ctx context.Context, c *s3.Client, workBucket, execution string) *markerLease {
	c = housekeeping(c)
	dest := ""
	var rec struct {
		Input create.Job `json:"input"`
	}
	cl := &cleaner{c: c, workBucket: workBucket}
	if ok, _, err := cl.readDoc(ctx, workPrefix(workBucket)+execution+"/"+stepfn.KeptName, &rec); ok && err == nil {
		dest = rec.Input.Destination.URI()
	}
	return leaseMarker(ctx, c, workBucket, newMarker(execution, dest))
}

// keptFor is how a kept run's marker says so, for clean-up.
func (m *runMarker) keptFor(now time.Time) (time.Duration, bool) {
	if m.KeptUntil.IsZero() || !now.Before(m.KeptUntil) {
		return 0, false
	}
	return m.KeptUntil.Sub(now), true
}

// keptExtract finds the marker of a kept extraction named execution, and
// says whether there is one. Otherwise resume looks for a create's run.
func keptExtract(ctx context.Context, c *s3.Client, workBucket, execution string) (runMarker, bool) {
	var m runMarker
	m.Execution, m.Archive = execution, "extract"
	cl := &cleaner{c: housekeeping(c), workBucket: workBucket}
	prefix := markerPrefix(workBucket, &m)
	var k stepfn.Kept
	if ok, _, err := cl.readDoc(ctx, prefix+stepfn.KeptName, &k); !ok || err != nil {
		return m, false
	}
	var ex extract.Extraction
	if json.Unmarshal(k.Input, &ex) != nil {
		return m, false
	}
	m.Archive = fmt.Sprintf("s3://%s/%s", ex.Archive.Bucket, ex.Archive.Key)
	m.Destination = fmt.Sprintf("s3://%s/%s", ex.DestBucket, ex.Prefix)
	return m, true
}

// extractResume holds resume's flags for continuing a kept extraction.
type extractResume struct {
	workBucket string
	keep       time.Duration
	asJSON     bool
}

// resumeExtract continues the kept extraction m.Execution.
func resumeExtract(ctx context.Context, client *s3.Client, m runMarker, o extractResume, stdout io.Writer) error {
	workBucket := o.workBucket
	counter := s3metrics.New()
	progress := newProgressPrinter(os.Stderr)
	start := time.Now()
	m.Ended, m.KeptUntil = time.Time{}, time.Time{}
	lease := leaseMarker(ctx, housekeeping(client), workBucket, withProcess(m))
	res, stats, err := extract.Resume(ctx, s3.New(client.Options(), counter.Option()), extract.ResumeRequest{WorkBucket: workBucket, Execution: m.Execution, Keep: o.keep}, progress.updateExtract)
	progress.finishRun(ctx, err)
	if kept := lease.end(ctx, err); kept != nil {
		return keptRun(kept, workBucket, clientEndpoint(client))
	}
	if err != nil {
		return err
	}
	wall := time.Since(start)
	if o.asJSON {
		return printJSON(stdout, map[string]any{"result": res, "resume": stats, "requests": counter.Snapshot(), "wallSeconds": wall.Seconds()})
	}
	fmt.Fprintf(stdout, "extracted   %d objects from %s\nreport      %s\n", len(res.Objects), res.Archive, res.Report)
	fmt.Fprintf(stdout, "resumed     from %s: %d of %d objects in the %d batches run again (%d of them already written), %d batches kept\n",
		stats.FailedState, stats.ObjectsRun, stats.Objects, stats.BatchesRun, stats.Present, stats.BatchesKept)
	printRequests(stdout, counter)
	fmt.Fprintf(stdout, "wall time   %.2f s\n", wall.Seconds())
	return nil
}

// withProcess returns m as this process's marker, with its host, PID and
// start.
func withProcess(m runMarker) runMarker {
	own := newMarker(m.Execution, m.Destination)
	own.Archive = m.Archive
	return own
}
