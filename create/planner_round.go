package create

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// The read rounds are the ReadEntries Map's runs, each doing the per-object
// work of one ReadsDone.Stage of planning. They run in this order, each only
// when it has jobs. PlanLayout resumes after each and may hand the Map the
// next.
const (
	// StagePin looks a manifest's objects up with LookupPin.
	StagePin = "pin"
	// StageRead is the read pass proper, whose ReadJob pieces read the
	// entries to compress and digest them.
	StageRead = "read"
	// StageCRC learns with LookupCRC the CRC-32s the layout needs before its
	// workers run. The plan is written before it and completed after it.
	StageCRC = "crc"
)

// How far planning has got, named by the last read round done.
const (
	passedNone = iota
	passedPin
	passedRead
	passedCRC
)

// passed reports how far planning has got once the round d describes is
// done, with a nil d meaning none was.
func (d *ReadsDone) passed() int {
	switch {
	case d == nil:
		return passedNone
	case d.Stage == StagePin:
		return passedPin
	case d.Stage == StageCRC:
		return passedCRC
	}
	return passedRead // a read plan with no stage is the read pass
}

// roundFolders are where each round's entries and jobs go under the
// execution's work prefix.
var roundFolders = map[string]string{StagePin: "pins/", StageRead: "reads/", StageCRC: "crc-lookups/"}

// roundJobs holds a round's jobs, each made when it is written or run, so
// that a round of a million lookups is not held as a million ReadJobs.
type roundJobs struct {
	n   int
	job func(i int) ReadJob
}

func jobsOf(jobs []ReadJob) roundJobs {
	return roundJobs{n: len(jobs), job: func(i int) ReadJob { return jobs[i] }}
}

// all returns every job, for a round run in process.
func (j roundJobs) all() []ReadJob {
	out := make([]ReadJob, j.n)
	for i := range out {
		out[i] = j.job(i)
	}
	return out
}

// encode returns the jobs as the JSON array the ItemReader reads.
func (j roundJobs) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	b.WriteByte('[')
	for i := 0; i < j.n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(j.job(i)); err != nil {
			return nil, err
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// handOver writes a read round's jobs to the work prefix, with its entries
// when it has some of its own, and returns the ReadPlan that routes the
// execution to the ReadEntries Map.
func (r *planRun) handOver(ctx context.Context, stage string, entries []plan.Entry, jobs roundJobs) (*ReadPlan, error) {
	folder := r.prefix + roundFolders[stage]
	rp := &ReadPlan{Execution: r.execution, WorkBucket: r.cfg.WorkBucket, WorkPrefix: r.prefix, Jobs: jobs.n,
		MaxConcurrency: maxConcurrency(r.cfg, r.req), Reads: ReadsDone{Stage: stage, JobsKey: folder + "jobs.json"}}
	most := DefaultLookupsPerBatch
	switch {
	case stage == StageRead:
		most = r.cfg.MaxReadsPerBatch
	case stage == StagePin && r.req.Options.KeepMetadata:
		most = KeptLookupsPerBatch // answers carry the metadata
	}
	rp.ReadsPerBatch = ReadsPerBatch(jobs.n, rp.MaxConcurrency, most)
	if entries != nil {
		rp.Reads.EntriesKey = folder + "entries.json"
		if err := writeJSON(ctx, r.pl.S3, r.cfg.WorkBucket, rp.Reads.EntriesKey, entries); err != nil {
			return nil, err
		}
	}
	doc, err := jobs.encode()
	if err != nil {
		return nil, fmt.Errorf("%s round jobs: %w", stage, err)
	}
	if err := putter(r.pl.S3)(ctx, r.cfg.WorkBucket, rp.Reads.JobsKey, doc); err != nil {
		return nil, err
	}
	return rp, nil
}

// roundFile reads a file of the round d, its entries or its jobs, into v.
// Only objects of this execution's work prefix are read.
func (r *planRun) roundFile(ctx context.Context, d *ReadsDone, key string, v any) error {
	if !strings.HasPrefix(key, r.prefix) {
		return fmt.Errorf("%s round object %q is outside this execution's work prefix %s", d.Stage, key, r.prefix)
	}
	doc, err := getBytes(ctx, r.pl.S3, r.cfg.WorkBucket, key, maxManifestBytes)
	if err != nil {
		return fmt.Errorf("%s round: %w", d.Stage, err)
	}
	if err := json.Unmarshal(doc, v); err != nil {
		return fmt.Errorf("%s round s3://%s/%s: %w", d.Stage, r.cfg.WorkBucket, key, err)
	}
	return nil
}

// roundBack reads back the entries, the jobs and the answers of a round
// that wrote entries of its own. J is ReadJob or lookupRef.
func roundBack[J any](ctx context.Context, r *planRun, d *ReadsDone) ([]plan.Entry, []J, answers, error) {
	var entries []plan.Entry
	var jobs []J
	if err := r.roundFile(ctx, d, d.EntriesKey, &entries); err != nil {
		return nil, nil, nil, err
	}
	if err := r.roundFile(ctx, d, d.JobsKey, &jobs); err != nil {
		return nil, nil, nil, err
	}
	got, err := r.roundAnswers(ctx, d, len(jobs))
	if err != nil {
		return nil, nil, nil, err
	}
	return entries, jobs, got, nil
}

// answers yields a round's results one at a time, from the Map's result
// files or from a batch run in process.
type answers func(fn func(ReadResult) error) error

func answersOf(results []ReadResult) answers {
	return func(fn func(ReadResult) error) error {
		for _, res := range results {
			if err := fn(res); err != nil {
				return err
			}
		}
		return nil
	}
}

// roundAnswers returns the results of the round d's jobs, of which there
// are jobs, as the ReadEntries Map's ResultWriter wrote them in this
// execution's work prefix.
func (r *planRun) roundAnswers(ctx context.Context, d *ReadsDone, jobs int) (answers, error) {
	if jobs == 0 {
		return answersOf(nil), nil
	}
	if d.Results == nil || d.Results.ResultWriterDetails == nil {
		return nil, fmt.Errorf("%s round: %d jobs and no ReadEntries results", d.Stage, jobs)
	}
	w := d.Results.ResultWriterDetails
	if w.Bucket != r.cfg.WorkBucket || !strings.HasPrefix(w.Key, r.prefix) {
		return nil, fmt.Errorf("%s round results s3://%s/%s are outside this execution's work prefix s3://%s/%s", d.Stage, w.Bucket, w.Key, r.cfg.WorkBucket, r.prefix)
	}
	return func(fn func(ReadResult) error) error {
		if err := eachReadResult(ctx, r.pl.S3, w, fn); err != nil {
			return fmt.Errorf("%s round: %w", d.Stage, err)
		}
		return nil
	}, nil
}

// eachReadResult calls fn with every result of every ReadEntries batch,
// from the Map's ResultWriter layout, a batch's output at a time.
func eachReadResult(ctx context.Context, c S3, d *stepfn.ResultWriterDetails, fn func(ReadResult) error) error {
	return eachMapOutput(ctx, c, d, func(output []byte) error {
		var out ReadBatchResult
		if err := json.Unmarshal(output, &out); err != nil {
			return fmt.Errorf("reader output: %w", err)
		}
		return answersOf(out.Results)(fn)
	})
}

// lookUpHere answers lookups in process for Plan and `s3zip plan`, as a
// reader would, HeadConcurrency at once.
func (r *planRun) lookUpHere(ctx context.Context, jobs roundJobs) (answers, error) {
	out, err := (&Reader{S3: r.pl.S3, Lookups: r.cfg.HeadConcurrency}).lookUpBatch(ctx, jobs.all())
	if err != nil {
		return nil, err
	}
	return answersOf(out.Results), nil
}

// lookupRef is what applying a lookup's answer needs of its job. A lookup
// round's jobs are read back as these, not as ReadJobs.
type lookupRef struct {
	Entry int `json:"entry"`
	Line  int `json:"line,omitempty"` // set by LookupPin jobs
}

func (j roundJobs) refs() []lookupRef {
	out := make([]lookupRef, j.n)
	for i := range out {
		job := j.job(i)
		out[i] = lookupRef{Entry: job.Entry, Line: job.Line}
	}
	return out
}

// eachLooked calls fn with each lookup's answer and its entry index, below
// n, in the order the answers come. It checks that every job got exactly one
// answer.
func eachLooked(n int, jobs []lookupRef, got answers, fn func(entry int, l *Looked) error) error {
	seen := make([]bool, n)
	answered := 0
	err := got(func(res ReadResult) error {
		switch {
		case res.Entry < 0 || res.Entry >= n || res.Object == nil:
			return fmt.Errorf("lookups: a result for entry %d of %d says nothing of its object", res.Entry, n)
		case seen[res.Entry]:
			return fmt.Errorf("lookups: two results for entry %d", res.Entry)
		}
		seen[res.Entry] = true
		answered++
		return fn(res.Entry, res.Object)
	})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Entry < 0 || j.Entry >= n || !seen[j.Entry] {
			return fmt.Errorf("lookups: no result for entry %d", j.Entry)
		}
	}
	if answered != len(jobs) {
		return fmt.Errorf("lookups: %d results for %d jobs", answered, len(jobs))
	}
	return nil
}
