package workflow

import (
	"context"

	"github.com/s3zip/s3zip/plan"
)

// resolveCRCs learns every CRC-32 the workers need before they run: from
// HeadObject when S3 stores the whole object's CRC-32, otherwise by reading
// the object. It never guesses.
func (pl *Planner) resolveCRCs(ctx context.Context, cfg Config, p *plan.Plan, workPrefix string) error {
	need := p.CRCsNeeded()
	var probe *crcProbe
	if len(need) > 0 {
		probe = &crcProbe{c: pl.S3, bucket: cfg.WorkBucket, key: workPrefix + "crc-probe"}
		defer probe.close(ctx)
	}
	tails := p.CopiedTails()
	return forEach(ctx, cfg.HeadConcurrency, len(need), func(ctx context.Context, k int) error {
		e := &p.Entries[need[k]]
		if tails[need[k]] {
			// Stored, or left to the worker that streams its start and
			// copies the rest (plan.Plan.CopiedTails).
			crc, ok, err := storedCRC(ctx, pl.S3, e)
			if ok {
				e.CRC32 = plan.KnownCRC(crc)
			}
			return err
		}
		crc, err := objectCRC(ctx, pl.S3, probe, e)
		if err != nil {
			return err
		}
		e.CRC32 = plan.KnownCRC(crc)
		return nil
	})
}
