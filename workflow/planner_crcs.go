package workflow

import (
	"context"
	"fmt"

	"github.com/s3zip/s3zip/plan"
)

// learnCRCs learns every CRC-32 the workers need before they run and the
// plan does not know: here (Plan), or by a CRC round of the ReadEntries Map
// (Start). For the round, the plan is written now and completed by
// PlanLayout (crcsLearned): planned again from its entries with some CRC-32s
// known, auto could choose another layout (it prices the lookups).
func (r *planRun) learnCRCs(ctx context.Context, p *plan.Plan) (*ReadPlan, error) {
	jobs := r.crcJobs(p)
	if len(jobs) == 0 {
		return nil, nil
	}
	if r.here {
		results, err := r.lookUpHere(ctx, jobs)
		if err != nil {
			return nil, err
		}
		return nil, applyCRCs(p, jobs, results)
	}
	job, err := r.pl.writePlan(ctx, r.cfg, r.req, p, r.execution)
	if err != nil {
		return nil, err
	}
	rp, err := r.handOver(ctx, StageCRC, nil, jobs)
	if err != nil {
		return nil, err
	}
	rp.Reads.EntriesKey = job.EntriesKey
	return rp, nil
}

// crcJobs are the lookups of the CRC-32s the plan needs. A copied tail's is
// asked only of S3's store: when S3 stores none, the worker that streams
// the tail's start combines it with S3's answer to the copy of the rest
// (plan.Plan.CopiedTails), so a tail the listing said stores none is not
// asked at all. Every other one is learned, never guessed.
func (r *planRun) crcJobs(p *plan.Plan) []ReadJob {
	need := p.CRCsNeeded()
	if len(need) == 0 {
		return nil
	}
	tails := p.CopiedTails()
	jobs := make([]ReadJob, 0, len(need))
	for _, i := range need {
		e := &p.Entries[i]
		job := ReadJob{Entry: int(i), Source: e.Source, Length: e.Size, Lookup: LookupCRC, Stored: r.stored.of(e.Source),
			Bucket: r.cfg.WorkBucket, Key: r.prefix + "crc-probe"}
		if tails[i] {
			if job.Stored != "" {
				continue
			}
			job.Lookup, job.Bucket, job.Key = LookupStoredCRC, "", ""
		}
		jobs = append(jobs, job)
	}
	return jobs
}

// crcsLearned is the plan the CRC round was for, read back, with the
// CRC-32s the round learned.
func (r *planRun) crcsLearned(ctx context.Context, d *ReadsDone) (*plan.Plan, error) {
	jobs, results, err := r.roundDone(ctx, d, nil)
	if err != nil {
		return nil, err
	}
	job := r.pl.planFiles(r.cfg, r.req, r.execution)
	if d.EntriesKey != job.EntriesKey {
		return nil, fmt.Errorf("crc round: its entries %q are not the plan's %q", d.EntriesKey, job.EntriesKey)
	}
	p, err := readPlan(ctx, r.pl.S3, job)
	if err != nil {
		return nil, fmt.Errorf("crc round: the plan: %w", err)
	}
	return p, applyCRCs(p, jobs, results)
}

// applyCRCs sets the CRC-32s the lookups learned. Only a copied tail's may
// stay unknown.
func applyCRCs(p *plan.Plan, jobs []ReadJob, results []ReadResult) error {
	looked, err := lookedUp(len(p.Entries), jobs, results)
	if err != nil {
		return fmt.Errorf("crc round: %w", err)
	}
	for _, j := range jobs {
		e, l := &p.Entries[j.Entry], looked[j.Entry]
		switch {
		case l.CRC32.Known:
			e.CRC32 = l.CRC32
		case j.Lookup == LookupCRC:
			return fmt.Errorf("crc round: the lookup of s3://%s/%s learned no CRC-32", j.Source.Bucket, j.Source.Key)
		}
	}
	return nil
}
