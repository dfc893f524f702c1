package create

import (
	"context"
	"fmt"

	"github.com/s3zip/s3zip/plan"
)

// learnCRCs learns every CRC-32 the workers need before they run and the
// plan does not know, in process for Plan or by a CRC round of the
// ReadEntries Map for Start. For the round, the plan is written first and
// PlanLayout completes it with crcsLearned. It is not planned again from its
// entries, because auto prices the lookups and, with some CRC-32s known,
// could choose another layout.
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

// crcJobs returns the lookups of the CRC-32s the plan needs, which are
// learned, never guessed. A copied tail's CRC-32 is not among them, because
// the worker that streams the tail's start learns it beside its other work,
// as plan.CarriedTail describes.
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

// crcsLearned reads back the plan the CRC round was for and sets the CRC-32s
// the round learned.
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

// applyCRCs sets the CRC-32s the lookups learned. A copied tail's may stay
// unknown, and Validate refuses any other unknown one.
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
