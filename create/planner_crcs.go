package create

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
	if jobs.n == 0 {
		return nil, nil
	}
	if r.here {
		got, err := r.lookUpHere(ctx, jobs)
		if err != nil {
			return nil, err
		}
		return nil, applyCRCs(p, jobs.refs(), got)
	}
	job := r.pl.planFiles(r.cfg, r.req, r.execution)
	if err := r.pl.writePlan(ctx, p, job); err != nil {
		return nil, err
	}
	rp, err := r.handOver(ctx, StageCRC, nil, jobs)
	if err != nil {
		return nil, err
	}
	rp.Reads.EntriesKey = job.EntriesKey
	return rp, nil
}

// crcJobs are the lookups of the CRC-32s the plan needs, learned, never
// guessed. A copied tail's is not among them: the worker that streams the
// tail's start learns it (plan.CarriedTail), beside its other work.
func (r *planRun) crcJobs(p *plan.Plan) roundJobs {
	need := p.CRCsNeeded()
	if len(need) == 0 {
		return roundJobs{}
	}
	return roundJobs{n: len(need), job: func(k int) ReadJob {
		e := &p.Entries[need[k]]
		return ReadJob{Entry: int(need[k]), Source: e.Source, Length: e.Size, Lookup: LookupCRC, Stored: r.stored.of(e.Source),
			Bucket: r.cfg.WorkBucket, Key: r.prefix + "crc-probe"}
	}}
}

// crcsLearned is the plan the CRC round was for, read back, with the
// CRC-32s the round learned.
func (r *planRun) crcsLearned(ctx context.Context, d *ReadsDone) (*plan.Plan, error) {
	var jobs []lookupRef
	if err := r.roundFile(ctx, d, d.JobsKey, &jobs); err != nil {
		return nil, err
	}
	got, err := r.roundAnswers(ctx, d, len(jobs))
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
	return p, applyCRCs(p, jobs, got)
}

// applyCRCs sets the CRC-32s the lookups learned (a copied tail's may stay
// unknown: Validate refuses any other that does).
func applyCRCs(p *plan.Plan, jobs []lookupRef, got answers) error {
	err := eachLooked(len(p.Entries), jobs, got, func(i int, l *Looked) error {
		if l.CRC32.Known {
			p.Entries[i].CRC32 = l.CRC32
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("crc round: %w", err)
	}
	return nil
}
