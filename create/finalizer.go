package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/presign"
	"github.com/s3zip/s3zip/plan"
)

// Finalizer writes the central directory as the last parts, completes the
// upload with the whole archive's CRC-32 so that S3 checks every byte,
// checks the result, writes a report and deletes the work prefix.
type Finalizer struct {
	S3     S3
	Config Config
	Log    *slog.Logger
	// Links signs the download links a request's options.presign asks for.
	// Nil signs none, and the output's warnings then say why.
	Links LinkSigner
}

// FinalizeInput is the FinalizeArchive state's payload, the job and, when
// there were worker parts, the Map's results.
type FinalizeInput struct {
	Job
	Results *MapResults `json:"results,omitempty"`
}

// Archive describes the finished archive.
type Archive struct {
	URI   string `json:"uri"`
	Size  int64  `json:"size"`
	ETag  string `json:"etag"`
	CRC32 string `json:"crc32"`
	// Entries is, for each archive of a split run, how many it holds.
	Entries int `json:"entries,omitempty"`
}

// FinalizeOutput is the workflow's result, the execution's output. It is a
// versioned contract, described in docs/output.md with its JSON Schema
// beside it.
type FinalizeOutput struct {
	Version   int     `json:"version"`   // OutputVersion
	RequestID string  `json:"requestId"` // the request's id, or the execution's name
	Execution string  `json:"execution"` // the execution's name
	Archive   Archive `json:"archive"`
	// Archives are every archive of a split run, in order, Archive being the
	// first. It is absent for one archive.
	Archives []Archive `json:"archives,omitempty"`
	Report   string    `json:"report"` // empty when it could not be written, and Warnings says why
	Entries  int       `json:"entries"`
	Parts    int       `json:"parts"`
	// Strategy is the plan's strategy, which auto resolves to one of the others.
	Strategy plan.Strategy `json:"strategy"`
	// Seconds is the time from the execution's start to the archive's
	// completion, or 0 when the caller gave no start.
	Seconds float64 `json:"seconds"`
	// ChecksumsFile names the archive's entry listing every entry's
	// SHA-256, when the request asked for one.
	ChecksumsFile string `json:"checksumsFile,omitempty"`
	// Links are the download links, when the request's options.presign asked.
	Links *presign.Links `json:"links,omitempty"`
	Stats ReportStats    `json:"stats"`
	// Warnings say what went wrong without making the archive wrong. The run
	// succeeded, and the caller shows them.
	Warnings []string `json:"warnings,omitempty"`
}

// ReportStats are the numbers of a finished run.
type ReportStats struct {
	plan.Stats
	StreamedBytesActual int64 `json:"streamedBytesActual"`
	CopiedBytesActual   int64 `json:"copiedBytesActual"`
	FinalizeMillis      int64 `json:"finalizeMillis"`
}

// Report is the JSON document written beside the archive.
type Report struct {
	Archive Archive `json:"archive"`
	// Archives are every archive of a split run, Archive being the first.
	Archives  []Archive     `json:"archives,omitempty"`
	Execution string        `json:"execution"`
	Strategy  plan.Strategy `json:"strategy"`
	Stats     ReportStats   `json:"stats"`
	Finished  time.Time     `json:"finished"`
	Entries   []ReportEntry `json:"entries"`
}

// ReportEntry is one archived object.
type ReportEntry struct {
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	Size   int64  `json:"size"`
	CRC32  string `json:"crc32"`
	Offset int64  `json:"offset"`
	// Compressed is a deflated entry's size in the archive.
	Compressed int64 `json:"compressedSize,omitempty"`
	// SHA256 is the data's SHA-256, when the request asked for digests.
	SHA256 string `json:"sha256,omitempty"`
	// Archive is, in a split run, the number of the entry's archive, 1 for
	// name-0001.zip, and Offset is in that archive.
	Archive int `json:"archive,omitempty"`
}

// Handle runs the finalizer. Run again after it completed the upload, it
// finds the archive in place, checks it, and finishes the rest.
func (f *Finalizer) Handle(ctx context.Context, in FinalizeInput) (*FinalizeOutput, error) {
	started := time.Now()
	cfg := f.Config.Defaults()
	job := in.Job
	log := logger(f.Log).With("execution", job.Execution, "destination", job.Destination.URI())
	l, err := readLayout(ctx, f.S3, &job)
	if err != nil {
		if s3err.NotFound(err) {
			if out, ok := f.finishedBefore(ctx, &job); ok {
				return out, nil
			}
		}
		return nil, err
	}
	crcs := plan.NewCRCs(l.Entries)
	results, err := f.results(ctx, &job, in.Results, len(l.WorkerParts()), crcs)
	if err != nil {
		return nil, err
	}
	lines, err := newReportLines()
	if err != nil {
		return nil, err
	}
	defer lines.discard()
	run := &finalRun{cfg: cfg, job: &job, l: l, crcs: crcs, lines: lines, checkReport: !job.Overwrite}
	if l.Split() {
		return f.finalizeSplit(ctx, run, results, started)
	}
	archive, stats, _, err := f.finalizeArchive(ctx, run, archiveRun{layout: l, job: &job, last: true}, results)
	if err != nil {
		return nil, err
	}
	stats.FinalizeMillis = time.Since(started).Milliseconds()
	out := &FinalizeOutput{Archive: *archive, Stats: stats}
	f.report(ctx, run, &Report{Archive: *archive}, out, fmt.Sprintf("the archive %s is complete and checked, but its report", archive.URI))
	if err := cleanWork(ctx, f.S3, &job); err != nil {
		return nil, fmt.Errorf("delete work prefix: %w", err)
	}
	f.describe(ctx, &job, out, l.Strategy)
	log.Info("archive complete", "size", archive.Size, "crc32", archive.CRC32, "entries", l.Entries, "millis", stats.FinalizeMillis)
	return out, nil
}

// finalRun is what finalizing a run's archives shares.
type finalRun struct {
	cfg   Config
	job   *Job
	l     *plan.Layout
	crcs  *plan.CRCs   // the workers', by entry index in the plan
	lines *reportLines // the report's entries, archive after archive
	// checkReport says to check the report's key is still free before
	// completing. A split run checks once, before its first archive.
	checkReport bool
}

// finalizeArchive finalizes one archive. It checks the workers' parts,
// streams the entries, sends the final parts, completes the upload, checks
// the result and adds the report lines. It returns where the next archive's
// entries start.
func (f *Finalizer) finalizeArchive(ctx context.Context, run *finalRun, ar archiveRun, results []PartResult) (*Archive, ReportStats, int64, error) {
	a, job := ar.layout, ar.job
	byPart, stats, err := mergeResults(a.WorkerParts(), a.Stats, results)
	if err != nil {
		return nil, stats, 0, err
	}
	dir, next, err := run.streamEntries(ctx, f.S3, ar)
	if err != nil {
		return nil, stats, 0, err
	}
	defer dir.discard()
	archiveCRC, completed, err := sendFinalParts(ctx, archiveUpload{c: f.S3, cfg: run.cfg, job: job}, dir, byPart, &stats)
	if err != nil {
		return nil, stats, 0, err
	}
	etag := "" // of the object this run's completion made, when it knows it
	if !completed && run.checkReport {
		// The planner found the report's key free, but another writer may
		// have taken it since. Fail now, while the upload can still be aborted.
		if err := checkReportFree(ctx, f.S3, run.job.Destination); err != nil {
			return nil, stats, 0, err
		}
	}
	if !completed {
		if err := recordCompleting(ctx, f.S3, job, max(ar.number-1, 0), completedArchive{Size: a.Size, CRC32: fmt.Sprintf("%08x", archiveCRC)}); err != nil {
			return nil, stats, 0, err
		}
		if etag, err = f.complete(ctx, job, a.Size, byPart, archiveCRC); err != nil && !s3err.IsCode(err, "NoSuchUpload") {
			return nil, stats, 0, err
		}
	}
	out, err := f.check(ctx, job, a.Size, archiveCRC, etag)
	if errors.Is(err, errArchiveDeleted) {
		// Nothing of the archive is left for Abort to find, so its record
		// goes too. A HEAD of a missing key needs s3:ListBucket, which Abort
		// lacks.
		key := doneKey(job.WorkPrefix, max(ar.number-1, 0))
		_, _ = f.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &job.WorkBucket, Key: &key})
	}
	if err != nil {
		return nil, stats, 0, err
	}
	if err := dir.finalLines(run.lines, ar.number); err != nil {
		run.lines.fail(err) // the archive is good, and the report says what went wrong
	}
	return out, stats, next, nil
}

// report puts the run's report r, its archives set, and names it in out. A
// report not written is a warning that starts with what, not a failure,
// since the archives are complete and checked and failing would have the
// Abort state discard them for want of their description.
func (f *Finalizer) report(ctx context.Context, run *finalRun, r *Report, out *FinalizeOutput, what string) {
	job := run.job
	r.Execution, r.Strategy, r.Stats = job.Execution, run.l.Strategy, out.Stats
	out.Report = "s3://" + job.Destination.Bucket + "/" + ReportKey(job.Destination)
	if err := f.putReport(ctx, job, r, run.lines); err != nil {
		logger(f.Log).Warn("report not written", "execution", job.Execution, "report", out.Report, "error", err.Error())
		out.Warnings = append(out.Warnings, fmt.Sprintf("%s %s was not written: %v", what, out.Report, err))
		out.Report = ""
	}
}

// sendFinalParts sends the final parts, the entries after the last worker
// part and the central directory. It reads the directory from its spool one
// final part at a time, never holding the whole of it, since millions of
// entries make gigabytes. It returns the archive's CRC-32 and whether an
// earlier run completed the upload already.
func sendFinalParts(ctx context.Context, u archiveUpload, dir *directorySpool, byPart map[int]PartResult, stats *ReportStats) (uint32, bool, error) {
	dirOffset := dir.offset
	completed := false
	var err error
	// One part's directory bytes, reused part after part. With a new buffer
	// for each, the collector let several 64 MiB parts pile up before it ran.
	var buf []byte
	for _, final := range dir.finals {
		readDirectory := func(computed map[plan.EntryIndex]uint32) ([]byte, error) {
			if err := dir.end(computed); err != nil {
				return nil, err
			}
			n := final.End - max(final.Start, dirOffset)
			if int64(cap(buf)) < n {
				buf = make([]byte, n)
			}
			b := buf[:n]
			if _, err := io.ReadFull(dir, b); err != nil {
				return nil, fmt.Errorf("central directory: %w", err)
			}
			return b, nil
		}
		var last *PartResult
		if final.Start >= dirOffset {
			// A part of directory only is read into its buffer, with no copy.
			var b []byte
			if b, err = readDirectory(nil); err == nil {
				last, err = sendPart(ctx, u.c, u.job, final.Number, b)
			}
		} else {
			last, err = u.uploadPart(ctx, &final, dir.final, nil, &finalDirectory{dirOffset, readDirectory})
		}
		if err != nil {
			if !s3err.IsCode(err, "NoSuchUpload") {
				return 0, false, fmt.Errorf("final part %d: %w", final.Number, err)
			}
			completed = true // a previous run completed the upload, as check makes sure
			break
		}
		byPart[final.Number] = *last
		stats.StreamedBytesActual += last.StreamedBytes
	}
	// A run after an earlier one completed the upload may not have sent
	// the part that ends the directory, and the CRC-32s all came from the
	// plan and the workers then.
	if err := dir.end(nil); err != nil {
		return 0, false, err
	}
	archiveCRC, err := dir.archiveCRC()
	return archiveCRC, completed, err
}

// results returns the Map's results of the worker parts and takes their
// CRC-32s into crcs.
func (f *Finalizer) results(ctx context.Context, job *Job, m *MapResults, workerParts int, crcs *plan.CRCs) ([]PartResult, error) {
	if workerParts == 0 {
		return nil, nil
	}
	if m == nil || m.ResultWriterDetails == nil {
		return nil, fmt.Errorf("no Map results for %d worker parts", workerParts)
	}
	return readMapResults(ctx, f.S3, job, m.ResultWriterDetails, crcs)
}

// finishedBefore recognises a run again after an earlier run finished all
// but returning. The plan is gone with the work prefix, and the report
// beside the archive describes the archive that is there.
func (f *Finalizer) finishedBefore(ctx context.Context, job *Job) (*FinalizeOutput, bool) {
	d := job.Destination
	reportKey := ReportKey(d)
	r, err := readReportHead(ctx, f.S3, d.Bucket, reportKey)
	if err != nil || r.Execution != job.Execution {
		return nil, false
	}
	archives := r.Archives
	if archives == nil {
		archives = []Archive{r.Archive}
	}
	for _, a := range archives {
		key := strings.TrimPrefix(a.URI, "s3://"+d.Bucket+"/")
		h, err := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &key})
		if err != nil || aws.ToInt64(h.ContentLength) != a.Size || aws.ToString(h.ETag) != a.ETag {
			return nil, false
		}
	}
	if err := cleanWork(ctx, f.S3, job); err != nil {
		return nil, false
	}
	out := &FinalizeOutput{Archive: r.Archive, Archives: r.Archives, Report: "s3://" + d.Bucket + "/" + reportKey, Stats: r.Stats}
	f.describe(ctx, job, out, r.Strategy)
	return out, true
}

// mergeResults checks that every worker part was built exactly as planned
// and adds up what they streamed and copied to the plan's stats.
// readMapResults took their CRC-32s.
func mergeResults(workers []plan.Part, planned plan.Stats, results []PartResult) (map[int]PartResult, ReportStats, error) {
	stats := ReportStats{Stats: planned}
	byPart := make(map[int]PartResult, len(results)+1)
	for _, r := range results {
		if r.Part < 1 || r.Part > len(workers) {
			return nil, stats, fmt.Errorf("a worker reports part %d; the plan's worker parts are 1 to %d", r.Part, len(workers))
		}
		byPart[r.Part] = r // a retried batch reports the same part again, and the last wins with the same bytes
	}
	var missing []int
	for _, part := range workers {
		r, ok := byPart[part.Number]
		if !ok {
			missing = append(missing, part.Number)
			continue
		}
		stats.StreamedBytesActual += r.StreamedBytes
		stats.CopiedBytesActual += r.CopiedBytes
	}
	if missing != nil {
		return nil, stats, fmt.Errorf("%d parts have no result (first: %v); the Map did not build them", len(missing), missing[:min(len(missing), 10)])
	}
	return byPart, stats, nil
}

// complete completes the archive's upload with its parts and its CRC-32, and
// returns the archive's ETag.
func (f *Finalizer) complete(ctx context.Context, job *Job, size int64, byPart map[int]PartResult, archiveCRC uint32) (string, error) {
	parts := make([]types.CompletedPart, 0, len(byPart))
	for n, r := range byPart {
		cp := types.CompletedPart{PartNumber: aws.Int32(int32(n)), ETag: aws.String(r.ETag)}
		if r.ChecksumCRC32 != "" {
			cp.ChecksumCRC32 = aws.String(r.ChecksumCRC32)
		}
		parts = append(parts, cp)
	}
	sort.Slice(parts, func(a, b int) bool { return *parts[a].PartNumber < *parts[b].PartNumber })
	in := &s3.CompleteMultipartUploadInput{
		Bucket: &job.Destination.Bucket, Key: &job.Destination.Key, UploadId: &job.UploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		ChecksumCRC32:   aws.String(s3part.CRCBase64(archiveCRC)),
		ChecksumType:    types.ChecksumTypeFullObject,
		MpuObjectSize:   aws.Int64(size),
	}
	if !job.Overwrite {
		// Another run may have written the key since planning, so never replace it.
		in.IfNoneMatch = aws.String("*")
	}
	out, err := f.S3.CompleteMultipartUpload(ctx, in)
	if err != nil {
		if s3err.IsCode(err, "ConditionalRequestConflict") {
			return "", &UploadRestartError{Destination: job.Destination.URI(), Err: err}
		}
		if s3err.IsCode(err, "PreconditionFailed", "NoSuchUpload") {
			// A retried Complete whose first attempt succeeded meets its own
			// archive, as a 412 when the key had to be free, else as the
			// upload gone. The same size and CRC-32 means done.
			d := job.Destination
			h, herr := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &d.Key, ChecksumMode: types.ChecksumModeEnabled})
			if herr == nil && aws.ToInt64(h.ContentLength) == size && aws.ToString(h.ChecksumCRC32) == s3part.CRCBase64(archiveCRC) {
				return aws.ToString(h.ETag), nil
			}
			if s3err.IsCode(err, "PreconditionFailed") {
				return "", &failure.DestinationExistsError{Bucket: d.Bucket, Key: d.Key}
			}
		}
		if s3err.IsCode(err, "BadDigest", "InvalidPart") {
			return "", failure.Checksum("S3 refused to complete %s: the assembled bytes do not have CRC-32 %08x: %v", job.Destination.URI(), archiveCRC, err)
		}
		return "", s3Error("CompleteMultipartUpload", job.Destination.Bucket, job.Destination.Key, false, err)
	}
	return aws.ToString(out.ETag), nil
}

// errArchiveDeleted marks check's error for an archive it deleted. Its text
// is empty, so the error reads as the mismatch alone.
var errArchiveDeleted = errors.New("")

// check reads back the archive's size and checksum. A wrong archive that
// this run's completion made, known by its ETag, is deleted, so no wrong
// bytes are left behind. An object another writer put at the key since is
// left alone.
func (f *Finalizer) check(ctx context.Context, job *Job, size int64, archiveCRC uint32, etag string) (*Archive, error) {
	d := job.Destination
	h, err := f.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &d.Key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		if s3err.NotFound(err) {
			return nil, &failure.DestinationExistsError{Bucket: d.Bucket, Key: d.Key, Msg: "the archive was removed from the key by another writer right after completion"}
		}
		return nil, s3Error("HeadObject", d.Bucket, d.Key, false, err)
	}
	want := s3part.CRCBase64(archiveCRC)
	got := aws.ToString(h.ChecksumCRC32)
	var problem string
	switch {
	case aws.ToInt64(h.ContentLength) != size:
		problem = fmt.Sprintf("is %d bytes, planned %d", aws.ToInt64(h.ContentLength), size)
	case got != "" && got != want:
		problem = fmt.Sprintf("has CRC-32 %s, computed %s", got, want)
	}
	switch {
	case problem == "":
	case etag == "" || aws.ToString(h.ETag) != etag:
		return nil, &failure.DestinationExistsError{Bucket: d.Bucket, Key: d.Key, Msg: fmt.Sprintf("%s %s: another writer replaced this run's archive (left as it is)", d.URI(), problem)}
	default:
		if _, derr := f.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &d.Bucket, Key: &d.Key}); derr != nil {
			return nil, failure.Checksum("archive %s %s; deleting it failed, delete it yourself: %v", d.URI(), problem, derr)
		}
		return nil, fmt.Errorf("%w%w", failure.Checksum("archive %s %s; it was deleted", d.URI(), problem), errArchiveDeleted)
	}
	return &Archive{URI: d.URI(), Size: size, ETag: aws.ToString(h.ETag), CRC32: fmt.Sprintf("%08x", archiveCRC)}, nil
}

// putReport puts the archive's report beside it, at ReportKey, and a split
// run's beside the key the request named. The document is r with the
// entries' lines spooled to $TMPDIR and put from there, since at ten million
// entries it is gigabytes, more than the finalizer's memory.
func (f *Finalizer) putReport(ctx context.Context, job *Job, r *Report, lines *reportLines) error {
	key := ReportKey(job.Destination)
	r.Finished = time.Now().UTC()
	doc, size, err := lines.document(r)
	if err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: &job.Destination.Bucket, Key: &key, ContentLength: aws.Int64(size), ContentType: aws.String("application/json")}
	if !job.Overwrite {
		in.IfNoneMatch = aws.String("*")
	}
	// The PUT is retried here, not by the state machine, since the archive
	// is done and a failure would only turn into a warning.
	err = reportRetry.Do(ctx, func(int) error {
		if _, err := doc.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("report file %s: %w", doc.Name(), err)
		}
		in.Body = doc
		_, err := f.S3.PutObject(ctx, in)
		return err
	})
	if err != nil && s3err.IsCode(err, "PreconditionFailed") {
		// This run's own report from an earlier attempt is done; anything
		// else appeared after the check just before completion, and is kept.
		if earlier, gerr := readReportHead(ctx, f.S3, job.Destination.Bucket, key); gerr == nil && earlier.Execution == job.Execution {
			return nil
		}
		return &failure.DestinationExistsError{Bucket: job.Destination.Bucket, Key: job.Destination.Key,
			Msg: fmt.Sprintf("another writer created s3://%s/%s during the run (left as it is)", job.Destination.Bucket, key)}
	}
	return s3Error("PutObject", job.Destination.Bucket, key, false, err)
}

// readReportHead reads a report up to its entries, its last field, which is
// what a run again needs to know whose it is and what it describes. The
// entries of ten million are gigabytes, more than the finalizer's memory.
func readReportHead(ctx context.Context, c S3, bucket, key string) (*Report, error) {
	body, err := openObject(ctx, c, bucket, key)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("report s3://%s/%s: not a JSON object (%v)", bucket, key, err)
	}
	head := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("report s3://%s/%s: %w", bucket, key, err)
		}
		name, _ := t.(string)
		if name == "entries" {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("report s3://%s/%s, %q: %w", bucket, key, name, err)
		}
		head[name] = v
	}
	doc, _ := json.Marshal(head) // raw JSON values always encode
	var r Report
	if err := json.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("report s3://%s/%s: %w", bucket, key, err)
	}
	return &r, nil
}

// reportRetry retries the report's PUT. A 409 ConditionalRequestConflict,
// from another conditional write to the key in progress, or a 5xx heals
// within seconds.
var reportRetry = s3err.Retry{Attempts: 5, Backoff: s3err.Linear(200 * time.Millisecond)}

// cleanWork aborts the chain rounds a failed worker may have left and
// deletes every work object of the job.
func cleanWork(ctx context.Context, c S3, job *Job) error {
	if _, err := abortUploadsUnder(ctx, c, job.WorkBucket, job.WorkPrefix); err != nil {
		return err
	}
	_, err := deletePrefix(ctx, c, job.WorkBucket, job.WorkPrefix)
	return err
}
