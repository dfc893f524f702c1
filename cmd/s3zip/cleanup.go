package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// A run the CLI starts keeps a marker at <work prefix><execution>/run.json
// for as long as it runs; an extract keeps it at
// <work prefix>extract/<execution>/run.json. The marker names the
// destination, an extract's archive and the process, and is written again
// every heartbeatInterval. A run killed hard, by kill -9 or a lost machine,
// leaves its marker behind with its work objects and uploads. The next create
// for the same destination, or `s3zip cleanup` of the archive, finds the
// marker and removes what that run left once the run is dead.
//
//   - On the same machine, with the same boot and PID namespace on Linux, the
//     run is dead at once when its process is gone.
//   - Anywhere else, it is dead when the marker has not been written for
//     staleAfter by the server's clock.
//
// Work prefixes without a marker are never touched. They belong to Step
// Functions executions, which clean up in their Abort state and under the
// work bucket's lifecycle rules.
const (
	markerName        = "run.json"
	heartbeatInterval = 15 * time.Second
)

// staleAfter is how long a marker may go unwritten before its run counts as
// dead, eight missed heartbeats. Tests shorten it.
var staleAfter = 2 * time.Minute

// runMarker is the document at <work prefix><execution>/run.json.
type runMarker struct {
	Execution   string `json:"execution"`
	Destination string `json:"destination"` // s3://bucket/key; an extract's s3://bucket/prefix/
	// Archive is the archive an extract reads, empty for a create.
	Archive string    `json:"archive,omitempty"`
	Started time.Time `json:"started"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	// Process identifies the process on this kind of machine, empty where
	// unknown. On Linux it holds the boot id, the PID namespace and the
	// process's start time.
	Process string `json:"process,omitempty"`
	// Ended is set when the run ended and left work behind because its
	// clean-up failed or was cut short. What is there is for cleanup to remove.
	Ended time.Time `json:"ended,omitzero"`
	// KeptUntil is set when the run failed for a cause a retry may mend and
	// --keep kept it for `s3zip resume`. Clean-up leaves it alone until then.
	KeptUntil time.Time `json:"keptUntil,omitzero"`
}

func workPrefix(workBucket string) string {
	return create.Config{WorkBucket: workBucket}.Defaults().WorkPrefix
}

// markerLease writes a run's marker and keeps it fresh until stop.
type markerLease struct {
	kept   time.Time // keepUntil kept the run for a resume until then
	c      *s3.Client
	bucket string
	key    string
	marker runMarker
	cancel context.CancelFunc
	done   chan struct{}
}

// newMarker is the marker of this process's run execution, for destination.
func newMarker(execution, destination string) runMarker {
	host, _ := os.Hostname()
	return runMarker{Execution: execution, Destination: destination, Started: time.Now().UTC(), Host: host, PID: os.Getpid(), Process: processIdentity(os.Getpid())}
}

// markerPrefix returns the work prefix where a run keeps its marker.
func markerPrefix(workBucket string, m *runMarker) string {
	if m.Archive != "" {
		return extract.Config{WorkBucket: workBucket}.Defaults().ExecutionPrefix(m.Execution)
	}
	return workPrefix(workBucket) + m.Execution + "/"
}

// startMarker writes the marker m in workBucket and starts its heartbeat.
func startMarker(ctx context.Context, c *s3.Client, workBucket string, m runMarker) (*markerLease, error) {
	doc, _ := json.Marshal(m)
	l := &markerLease{c: c, bucket: workBucket, key: markerPrefix(workBucket, &m) + markerName, marker: m, done: make(chan struct{})}
	if err := l.put(ctx, doc); err != nil {
		return nil, fmt.Errorf("write run marker s3://%s/%s: %w", l.bucket, l.key, err)
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go func() {
		defer close(l.done)
		t := time.NewTicker(heartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				_ = l.put(hctx, doc) // a missed beat only brings staleness nearer
			}
		}
	}()
	return l, nil
}

func (l *markerLease) put(ctx context.Context, doc []byte) error {
	_, err := l.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &l.bucket, Key: &l.key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc))), ContentType: aws.String("application/json")})
	return err
}

// stop ends the heartbeat. A run that left nothing under its work prefix,
// because it completed or its Abort cleaned up, deletes its marker. One that
// left work, after an abort that failed or a clean-up cut short, keeps it
// marked ended, so that `s3zip cleanup` and the next create for the
// destination find what is there and remove it.
func (l *markerLease) stop(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.cancel()
	<-l.done
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// The run is over and nothing waits on these requests, so they are
	// retried as any other within the 30 s, and a 500 does not leave the marker.
	c := s3.New(l.c.Options(), func(o *s3.Options) { o.RetryMaxAttempts = s3rate.DefaultAttempts })
	if left := workLeft(ctx, c, l.bucket, strings.TrimSuffix(l.key, markerName)); len(left) > 0 {
		m := l.marker
		m.Ended, m.KeptUntil = time.Now().UTC(), l.kept
		doc, _ := json.Marshal(m)
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &l.bucket, Key: &l.key, Body: bytes.NewReader(doc), ContentLength: aws.Int64(int64(len(doc))), ContentType: aws.String("application/json")})
		return err
	}
	_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &l.bucket, Key: &l.key})
	return err
}

// keepUntil marks the run kept for a resume until t. stop records it in
// the marker, and clean-up leaves the run alone until then.
func (l *markerLease) keepUntil(t time.Time) {
	if l != nil {
		l.kept = t.UTC()
	}
}

// end stops the lease of a run that ended with err. A run kept for a resume
// stays marked kept until then, and end returns its stepfn.KeptError, or nil
// for any other run.
func (l *markerLease) end(ctx context.Context, err error) *stepfn.KeptError {
	var kept *stepfn.KeptError
	if errors.As(err, &kept) {
		l.keepUntil(kept.Until)
	}
	l.stop(ctx)
	return kept
}

// workLeft says which objects and multipart uploads a run left under its
// work prefix besides its marker. A listing that fails says so too, as work
// that cannot be seen counts as left.
func workLeft(ctx context.Context, c *s3.Client, bucket, prefix string) []string {
	var left []string
	objs, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		left = append(left, fmt.Sprintf("work objects unknown (%v)", err))
	} else {
		n := 0
		for _, o := range objs.Contents {
			if aws.ToString(o.Key) != prefix+markerName {
				n++
			}
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d work objects under s3://%s/%s", n, bucket, prefix))
		}
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		left = append(left, fmt.Sprintf("work uploads unknown (%v)", err))
	} else if n := len(ups.Uploads); n > 0 {
		left = append(left, fmt.Sprintf("%d multipart uploads under s3://%s/%s", n, bucket, prefix))
	}
	return left
}

// foundRun is a marked run for the destination, and what became of it.
type foundRun struct {
	Marker     runMarker `json:"marker"`
	LastBeat   time.Time `json:"lastHeartbeat"`
	Dead       bool      `json:"dead"`
	Why        string    `json:"why"`
	Uploads    int       `json:"uploadsAborted,omitempty"`
	Objects    int       `json:"workObjectsDeleted,omitempty"`
	Extracted  int       `json:"extractedObjectsDeleted,omitempty"` // an extract's objects
	CleanError string    `json:"error,omitempty"`
}

// cleanupResult is what a clean-up found and did.
type cleanupResult struct {
	Destination string     `json:"destination"`
	WorkBucket  string     `json:"workBucket"`
	Runs        []foundRun `json:"runs"`
	// Unrecorded are uploads of the destination's key that no run records.
	// They are another tool's, a run's whose work bucket is elsewhere, or a
	// run's killed between creating its upload and recording it, and are
	// left alone for the bucket's lifecycle rule.
	Unrecorded []string `json:"unrecordedUploads,omitempty"`
}

func (r *cleanupResult) removed() (runs, uploads, extracted, objects int) {
	for _, f := range r.Runs {
		if f.Dead && f.CleanError == "" {
			runs++
			uploads += f.Uploads
			extracted += f.Extracted
			objects += f.Objects
		}
	}
	return
}

// cleanDeadRuns finds the marked runs for dest in workBucket, the creates of
// it and the extracts of it, and removes what the dead ones left. For a
// create that is its archive upload, the chain rounds and CRC probes uploaded
// under its work prefix, and its work objects. For an extract it is its
// uploads, the objects it wrote under its destination, as its Abort would
// remove them, and its work objects. Live runs are left alone.
//
// Runs that create --keep kept for a resume count as live until their keep
// time has passed, unless cl.removeKept is set.
func cleanDeadRuns(ctx context.Context, cl *cleaner, dest create.Destination, self string) (*cleanupResult, error) {
	res := &cleanupResult{Destination: dest.URI(), WorkBucket: cl.workBucket}
	prefixes, now, err := cl.runPrefixes(ctx)
	if err != nil {
		return res, err
	}
	records, err := cl.records(ctx, prefixes)
	if err != nil {
		return res, err
	}
	recorded := map[string]bool{}
	for _, r := range records {
		if r.uploadID != "" {
			recorded[r.uploadID] = true
		}
		m := r.marker
		if m == nil || m.Execution == self || m.Archive == "" && m.Destination != dest.URI() || m.Archive != "" && m.Archive != dest.URI() {
			continue
		}
		f := foundRun{Marker: *m, LastBeat: r.lastBeat}
		f.Dead, f.Why = runDead(m, r.lastBeat, now)
		if _, kept := m.keptFor(now); kept && cl.removeKept {
			f.Dead, f.Why = true, fmt.Sprintf("kept for a resume until %s; removed as asked (--kept)", m.KeptUntil.Format(time.RFC3339))
		}
		if f.Dead {
			cl.clean(ctx, &f)
		}
		res.Runs = append(res.Runs, f)
	}
	if res.Unrecorded, err = cl.unrecordedUploads(ctx, dest, recorded); err != nil {
		return res, err
	}
	for _, f := range res.Runs {
		if f.CleanError != "" {
			return res, fmt.Errorf("remove what run %s left: %s", f.Marker.Execution, f.CleanError)
		}
	}
	return res, nil
}

// cleaner finds and removes what dead runs left in one work bucket.
type cleaner struct {
	c          *s3.Client
	workBucket string
	removeKept bool // cleanup --kept removes runs kept for a resume too
}

// runPrefixes lists the work prefixes of creates and of extracts, and
// returns them with the server's time, the clock heartbeats are judged by.
// When the server gives none, the time is this machine's.
func (cl *cleaner) runPrefixes(ctx context.Context) ([]string, time.Time, error) {
	var prefixes []string
	now := time.Time{}
	for _, under := range []string{workPrefix(cl.workBucket), extract.Config{WorkBucket: cl.workBucket}.Defaults().ExecutionsPrefix()} {
		p := s3.NewListObjectsV2Paginator(cl.c, &s3.ListObjectsV2Input{Bucket: &cl.workBucket, Prefix: &under, Delimiter: aws.String("/")})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, now, fmt.Errorf("list s3://%s/%s: %w", cl.workBucket, under, err)
			}
			if t, ok := awsmiddleware.GetServerTime(page.ResultMetadata); ok && now.IsZero() {
				now = t
			}
			for _, cp := range page.CommonPrefixes {
				prefixes = append(prefixes, aws.ToString(cp.Prefix))
			}
		}
	}
	if now.IsZero() {
		now = time.Now()
	}
	return prefixes, now, nil
}

// runRecord is what a work prefix holds about its run. That is its marker,
// nil when it has none that names the prefix, when that was last written,
// and a create's archive upload.
type runRecord struct {
	marker   *runMarker
	lastBeat time.Time
	uploadID string
}

// records reads every work prefix's marker and upload record, a few at a time.
func (cl *cleaner) records(ctx context.Context, prefixes []string) ([]runRecord, error) {
	records := make([]runRecord, len(prefixes))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, prefix := range prefixes {
		g.Go(func() error { return cl.record(gctx, prefix, &records[i]) })
	}
	return records, g.Wait()
}

// record reads prefix's marker and upload record into r. Either may be
// missing, or not readable as one, and then it is not a run's.
func (cl *cleaner) record(ctx context.Context, prefix string, r *runRecord) error {
	var m runMarker
	ok, written, err := cl.readDoc(ctx, prefix+markerName, &m)
	if err != nil {
		return err
	}
	if ok && m.Execution != "" && prefix == markerPrefix(cl.workBucket, &m) {
		r.marker, r.lastBeat = &m, written
	}
	var job create.Job
	if ok, _, err = cl.readDoc(ctx, prefix+"upload.json", &job); ok {
		r.uploadID = job.UploadID
	}
	return err
}

// readDoc reads the JSON document at key into v and says whether v holds it
// and when it was written. v does not hold it when there is none or it
// cannot be read as v. Only a GET that fails otherwise than "not found" is an
// error.
func (cl *cleaner) readDoc(ctx context.Context, key string, v any) (bool, time.Time, error) {
	out, err := cl.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &cl.workBucket, Key: &key})
	if s3err.NotFound(err) {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, fmt.Errorf("read s3://%s/%s: %w", cl.workBucket, key, err)
	}
	doc, err := io.ReadAll(io.LimitReader(out.Body, 1<<20))
	out.Body.Close()
	return err == nil && json.Unmarshal(doc, v) == nil, aws.ToTime(out.LastModified), nil
}

// clean removes what the dead run f left, as its Abort would, and counts it
// in f. When it cannot, f.CleanError says why.
func (cl *cleaner) clean(ctx context.Context, f *foundRun) {
	m := f.Marker
	if m.Archive != "" {
		ea := &extract.Aborter{S3: cl.c, Config: extract.Config{WorkBucket: cl.workBucket}}
		if out, err := ea.AbortDead(ctx, m.Execution); err != nil {
			f.CleanError = err.Error()
		} else {
			f.Uploads, f.Extracted, f.Objects = out.UploadsAborted, out.ObjectsDeleted, out.WorkDeleted
		}
		return
	}
	// The Aborter counts objects, not the chain rounds and CRC probes
	// uploaded under the prefix, so those are counted first.
	prefix := workPrefix(cl.workBucket) + m.Execution + "/"
	if ups, err := cl.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &cl.workBucket, Prefix: &prefix}); err == nil {
		f.Uploads = len(ups.Uploads)
	}
	aborter := &create.Aborter{S3: cl.c, Config: create.Config{WorkBucket: cl.workBucket}, Log: slog.New(slog.DiscardHandler)}
	out, err := aborter.Handle(ctx, create.AbortInput{Execution: m.Execution, Error: json.RawMessage(`{"Error":"DeadRun","Cause":"cleaned up after a run that was killed"}`)})
	if err != nil {
		f.CleanError = err.Error()
		return
	}
	f.Objects = out.WorkDeleted
	if out.UploadAborted {
		f.Uploads++
	}
}

// unrecordedUploads are the uploads of dest's key that no run records.
func (cl *cleaner) unrecordedUploads(ctx context.Context, dest create.Destination, recorded map[string]bool) ([]string, error) {
	ups, err := cl.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &dest.Bucket, Prefix: &dest.Key})
	if err != nil {
		return nil, fmt.Errorf("list uploads of %s: %w", dest.URI(), err)
	}
	var unrecorded []string
	for _, u := range ups.Uploads {
		if aws.ToString(u.Key) == dest.Key && !recorded[aws.ToString(u.UploadId)] {
			unrecorded = append(unrecorded, fmt.Sprintf("%s (initiated %s)", aws.ToString(u.UploadId), aws.ToTime(u.Initiated).UTC().Format(time.RFC3339)))
		}
	}
	return unrecorded, nil
}

// runDead decides whether the run a marker names is over, and says why.
func runDead(m *runMarker, lastBeat, now time.Time) (bool, string) {
	if left, ok := m.keptFor(now); ok {
		return false, fmt.Sprintf("kept for `s3zip resume %s` until %s (%s from now)", m.Execution, m.KeptUntil.Format(time.RFC3339), left.Round(time.Minute))
	}
	if !m.Ended.IsZero() {
		return true, fmt.Sprintf("the run ended at %s and left work behind", m.Ended.Format(time.RFC3339))
	}
	if m.Process != "" && m.Process == processIdentity(m.PID) {
		return false, fmt.Sprintf("process %d on %s is running", m.PID, m.Host)
	}
	if m.Process != "" && sameMachine(m.Process) {
		return true, fmt.Sprintf("process %d on %s has exited", m.PID, m.Host)
	}
	age := now.Sub(lastBeat)
	if age > staleAfter {
		return true, fmt.Sprintf("no heartbeat from process %d on %s for %s", m.PID, m.Host, age.Round(time.Second))
	}
	return false, fmt.Sprintf("process %d on %s wrote its heartbeat %s ago (a run counts as dead after %s without one)", m.PID, m.Host, age.Round(time.Second), staleAfter)
}

// printCleanup says what a clean-up removed and what it left.
func printCleanup(w io.Writer, r *cleanupResult, quietIfNothing bool) {
	runs, uploads, extracted, objects := r.removed()
	if runs == 0 && quietIfNothing {
		return
	}
	for _, f := range r.Runs {
		state := "live, left alone"
		switch {
		case f.Dead && f.CleanError != "":
			state = "dead; removing what it left failed: " + f.CleanError
		case f.Dead && f.Marker.Archive != "":
			state = fmt.Sprintf("dead; removed %s, %s it wrote where nothing was before (objects it replaced keep the archive's content) and %d work objects",
				count(f.Uploads, "multipart upload", "multipart uploads"), count(f.Extracted, "extracted object", "extracted objects"), f.Objects)
		case f.Dead:
			state = fmt.Sprintf("dead; removed %d multipart uploads and %d work objects", f.Uploads, f.Objects)
		}
		what := "run"
		if f.Marker.Archive != "" {
			what = fmt.Sprintf("extract of %s into %s, run", f.Marker.Archive, f.Marker.Destination)
		}
		fmt.Fprintf(w, "%s %s (started %s): %s: %s\n", what, f.Marker.Execution, f.Marker.Started.Format(time.RFC3339), f.Why, state)
	}
	if !quietIfNothing {
		if len(r.Runs) == 0 {
			fmt.Fprintf(w, "no run of s3zip for %s has work in s3://%s/%s; a run given --work-bucket, or an extract into another bucket "+
				"(whose work is in its destination's bucket), is cleaned up with --work-bucket BUCKET\n", r.Destination, r.WorkBucket, workPrefix(r.WorkBucket))
		}
		for _, u := range r.Unrecorded {
			fmt.Fprintf(w, "multipart upload %s of %s: no run records it; left alone (a lifecycle rule AbortIncompleteMultipartUpload removes it)\n", u, r.Destination)
		}
	}
	if runs > 0 {
		extra := ""
		if extracted > 0 {
			extra = ", " + count(extracted, "extracted object", "extracted objects")
		}
		fmt.Fprintf(w, "removed what %s left: %s%s, %d work objects\n", count(runs, "dead run", "dead runs"), count(uploads, "upload", "uploads"), extra, objects)
	}
}

func runCleanup(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("cleanup", "s3zip cleanup s3://bucket/archive.zip [--work-bucket B] [--endpoint URL] [--kept] [--json]",
		"Removes the work objects and multipart uploads of runs that create that archive, or extract it,\nthat were killed (kill -9, a lost machine), and the objects a killed extract wrote (not those it\nreplaced). A run whose process is still running, or whose heartbeat is\nfresher than "+staleAfter.String()+", is left alone, and so is a run kept for `s3zip resume` (unless --kept).")
	endpoint := fs.String("endpoint", "", "S3-compatible endpoint `URL` (default $S3_ENDPOINT or $AWS_ENDPOINT_URL_S3)")
	workBucket := fs.String("work-bucket", "", "bucket the run kept its work in (default: the archive's bucket)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	kept := fs.Bool("kept", false, "also remove runs kept for `s3zip resume` (create --keep) whose keep time has not passed")
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	if err := wantArgs("cleanup", pos, "s3://bucket/archive.zip"); err != nil {
		return err
	}
	bucket, key, err := parseS3ObjectURI(pos[0])
	if err != nil {
		return usageErrorf("cleanup: %v", err)
	}
	if *workBucket == "" {
		*workBucket = bucket
	}
	client, err := connect(ctx, "cleanup", *endpoint, bucketCheck{role: "work", bucket: *workBucket})
	if err != nil {
		return err
	}
	res, err := cleanDeadRuns(ctx, &cleaner{c: client, workBucket: *workBucket, removeKept: *kept}, create.Destination{Bucket: bucket, Key: key}, "")
	if *asJSON && res != nil {
		if jerr := printJSON(stdout, res); jerr != nil && err == nil {
			err = jerr
		}
	} else if res != nil {
		printCleanup(stdout, res, false)
	}
	if err != nil {
		return fmt.Errorf("cleanup %s: %w", pos[0], err)
	}
	return nil
}

// startRun prepares a create. It writes this run's marker, then removes
// what dead runs for the same destination left, saying so on stderr. When
// the marker cannot be written the work bucket is unusable and the run
// itself will say why; a clean-up that fails is a warning.
func startRun(ctx context.Context, c *s3.Client, workBucket, execution string, dest create.Destination) *markerLease {
	c = housekeeping(c)
	setCleanupHint("the next create for the same archive removes what is left, or now: " + cleanupCommand(dest, workBucket, clientEndpoint(c)))
	lease := leaseMarker(ctx, c, workBucket, newMarker(execution, dest.URI()))
	if lease == nil {
		return nil
	}
	res, err := cleanDeadRuns(ctx, &cleaner{c: c, workBucket: workBucket}, dest, execution)
	if res != nil {
		printCleanup(os.Stderr, res, true)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "s3zip: warning: could not remove what earlier runs for %s left (%s): %v\n", dest.URI(), cleanupCommand(dest, workBucket, clientEndpoint(c)), err)
	}
	return lease
}

// housekeeping returns c making one attempt per request, so that
// housekeeping does not hold up the run or its real error with retries.
func housekeeping(c *s3.Client) *s3.Client {
	return s3.New(c.Options(), func(o *s3.Options) { o.RetryMaxAttempts = 1 })
}

// leaseMarker writes a run's marker m, or returns nil when it cannot. Then
// the work bucket is unusable and the run itself will say why.
func leaseMarker(ctx context.Context, c *s3.Client, workBucket string, m runMarker) *markerLease {
	lease, err := startMarker(ctx, c, workBucket, m)
	if err != nil {
		return nil
	}
	return lease
}

// startExtractRun writes the marker of the extract req describes in its work
// bucket, naming its archive, its destination s3://bucket/prefix/ and its
// execution, so that `s3zip cleanup` of the archive finds what the run
// leaves if it is killed.
func startExtractRun(ctx context.Context, c *s3.Client, req extract.Request) *markerLease {
	archive := create.Destination{Bucket: req.Bucket, Key: req.Key}
	m := newMarker(req.Execution, fmt.Sprintf("s3://%s/%s", req.DestBucket, req.Prefix))
	m.Archive = archive.URI()
	setCleanupHint("remove what is left with: " + cleanupCommand(archive, req.WorkBucket, clientEndpoint(c)))
	return leaseMarker(ctx, housekeeping(c), req.WorkBucket, m)
}

// cleanupHint says how to remove what the current run leaves if it is
// stopped before its own clean-up ends, ending with the command that does.
var cleanupHint struct {
	sync.Mutex
	s string
}

func setCleanupHint(advice string) {
	cleanupHint.Lock()
	defer cleanupHint.Unlock()
	cleanupHint.s = advice
}

// cleanupCommand returns the `s3zip cleanup` that finds the runs for archive
// whose work is in workBucket, on the S3 at endpoint, empty for AWS. It is
// quoted for a shell, so printed advice runs as printed, in another terminal
// too.
// Region and credentials come from the environment, as for every command.
func cleanupCommand(archive create.Destination, workBucket, endpoint string) string {
	args := []string{"s3zip", "cleanup", archive.URI()}
	if workBucket != "" && workBucket != archive.Bucket {
		args = append(args, "--work-bucket", workBucket)
	}
	if endpoint != "" {
		args = append(args, "--endpoint", endpoint)
	}
	return shellCommand(args...)
}

// clientEndpoint returns the endpoint c sends its requests to as --endpoint
// takes it, empty for AWS.
func clientEndpoint(c *s3.Client) string {
	return aws.ToString(c.Options().BaseEndpoint)
}

func getCleanupHint() string {
	cleanupHint.Lock()
	defer cleanupHint.Unlock()
	return strings.TrimSpace(cleanupHint.s)
}
