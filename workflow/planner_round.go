package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/plan"
)

// Read rounds: the ReadEntries Map's runs, each the per-object work of a
// step of planning (ReadsDone.Stage), in this order, each only when it has
// jobs. PlanLayout resumes after each, and may hand the Map the next.
const (
	// StagePin looks a manifest's objects up (LookupPin).
	StagePin = "pin"
	// StageRead reads entries: compresses them, digests them (the read
	// pass proper: ReadJob pieces).
	StageRead = "read"
	// StageCRC learns the CRC-32s the layout needs before its workers run
	// (LookupCRC, LookupStoredCRC): the plan is written before it and
	// completed after it.
	StageCRC = "crc"
)

// How far planning is, by the last read round done.
const (
	passedNone = iota
	passedPin
	passedRead
	passedCRC
)

// passed is how far planning is once the round d describes is done (nil:
// none was).
func (d *ReadsDone) passed() int {
	switch {
	case d == nil:
		return passedNone
	case d.Stage == StagePin:
		return passedPin
	case d.Stage == StageCRC:
		return passedCRC
	}
	return passedRead // a read plan written before the stages had names was the read pass
}

// roundFolders are where each round's entries and jobs go under the
// execution's work prefix.
var roundFolders = map[string]string{StagePin: "pins/", StageRead: "reads/", StageCRC: "crc-lookups/"}

// handOver writes a read round to the work prefix — its entries, when it
// has some of its own, and its jobs — and returns the ReadPlan that routes
// the execution to the ReadEntries Map.
func (r *planRun) handOver(ctx context.Context, stage string, entries []plan.Entry, jobs []ReadJob) (*ReadPlan, error) {
	folder := r.prefix + roundFolders[stage]
	rp := &ReadPlan{Execution: r.execution, WorkBucket: r.cfg.WorkBucket, WorkPrefix: r.prefix, Jobs: len(jobs),
		MaxConcurrency: maxConcurrency(r.cfg, r.req), Reads: ReadsDone{Stage: stage, JobsKey: folder + "jobs.json"}}
	most := DefaultLookupsPerBatch
	if stage == StageRead {
		most = r.cfg.MaxReadsPerBatch
	}
	rp.ReadsPerBatch = ReadsPerBatch(len(jobs), rp.MaxConcurrency, most)
	if entries != nil {
		rp.Reads.EntriesKey = folder + "entries.json"
		if err := writeJSON(ctx, r.pl.S3, r.cfg.WorkBucket, rp.Reads.EntriesKey, entries); err != nil {
			return nil, err
		}
	}
	if jobs == nil {
		jobs = []ReadJob{} // the ItemReader wants a JSON array
	}
	if err := writeJSON(ctx, r.pl.S3, r.cfg.WorkBucket, rp.Reads.JobsKey, jobs); err != nil {
		return nil, err
	}
	return rp, nil
}

// roundDone reads back a round the ReadEntries Map ran: its entries into
// entries (when it wrote some; nil skips them), its jobs, and their results.
// Only objects of this execution's work prefix are read.
func (r *planRun) roundDone(ctx context.Context, d *ReadsDone, entries *[]plan.Entry) ([]ReadJob, []ReadResult, error) {
	type roundFile struct {
		key string
		v   any
	}
	var jobs []ReadJob
	files := []roundFile{{d.JobsKey, &jobs}}
	if entries != nil {
		files = append(files, roundFile{d.EntriesKey, entries})
	}
	for _, f := range files {
		if !strings.HasPrefix(f.key, r.prefix) {
			return nil, nil, fmt.Errorf("%s round object %q is outside this execution's work prefix %s", d.Stage, f.key, r.prefix)
		}
		doc, err := getBytes(ctx, r.pl.S3, r.cfg.WorkBucket, f.key, maxManifestBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s round: %w", d.Stage, err)
		}
		if err := json.Unmarshal(doc, f.v); err != nil {
			return nil, nil, fmt.Errorf("%s round s3://%s/%s: %w", d.Stage, r.cfg.WorkBucket, f.key, err)
		}
	}
	if len(jobs) == 0 {
		return jobs, nil, nil
	}
	if d.Results == nil || d.Results.ResultWriterDetails == nil {
		return nil, nil, fmt.Errorf("%s round: %d jobs and no ReadEntries results", d.Stage, len(jobs))
	}
	if w := d.Results.ResultWriterDetails; w.Bucket != r.cfg.WorkBucket || !strings.HasPrefix(w.Key, r.prefix) {
		return nil, nil, fmt.Errorf("%s round results s3://%s/%s are outside this execution's work prefix s3://%s/%s", d.Stage, w.Bucket, w.Key, r.cfg.WorkBucket, r.prefix)
	}
	results, err := readReadResults(ctx, r.pl.S3, d.Results.ResultWriterDetails)
	if err != nil {
		return nil, nil, fmt.Errorf("%s round: %w", d.Stage, err)
	}
	return jobs, results, nil
}

// lookUpHere answers lookups in process (Plan, `s3zip plan`), as a reader
// would, HeadConcurrency at once.
func (r *planRun) lookUpHere(ctx context.Context, jobs []ReadJob) ([]ReadResult, error) {
	out, err := (&Reader{S3: r.pl.S3, Lookups: r.cfg.HeadConcurrency}).lookUpBatch(ctx, jobs)
	if err != nil {
		return nil, err
	}
	return out.Results, nil
}

// lookedUp is each looked-up entry's answer, by entry index (of n): one
// result for every job, whatever order the Map's result files gave them in.
func lookedUp(n int, jobs []ReadJob, results []ReadResult) ([]*Looked, error) {
	if len(results) != len(jobs) {
		return nil, fmt.Errorf("lookups: %d results for %d jobs", len(results), len(jobs))
	}
	looked := make([]*Looked, n)
	for _, res := range results {
		if res.Entry < 0 || res.Entry >= n || res.Object == nil {
			return nil, fmt.Errorf("lookups: a result for entry %d of %d says nothing of its object", res.Entry, n)
		}
		looked[res.Entry] = res.Object
	}
	for _, j := range jobs {
		if j.Entry < 0 || j.Entry >= n || looked[j.Entry] == nil {
			return nil, fmt.Errorf("lookups: no result for entry %d (s3://%s/%s)", j.Entry, j.Source.Bucket, j.Source.Key)
		}
	}
	return looked, nil
}
