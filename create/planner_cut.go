package create

import (
	"context"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/s3zip/s3zip/plan"
)

// layOut plans the archive from its entries and checks it against the
// deployment's size limit. The plan is priced knowing which sources S3
// stores no CRC-32 of, as r.stored records. learnCRCs learns the CRC-32s its
// workers need afterwards.
func (r *planRun) layOut(ctx context.Context, entries []plan.Entry) (*plan.Plan, error) {
	pl, cfg, req := r.pl, r.cfg, r.req
	opts := layoutOptions(cfg, req, r.stored)
	var p *plan.Plan
	var err error
	switch l := req.Options.splitLimits(); {
	case l.On() && req.Options.ChecksumsFile != "":
		p, err = r.listedArchives(ctx, entries)
	case l.On():
		p, err = plan.MakeSplit(entries, opts, l)
	default:
		p, err = plan.Make(entries, opts)
	}
	if err != nil {
		return nil, planError(err)
	}
	warnWrongTool(pl.runLog(r.execution, req), p, entries, opts)
	if cfg.MaxArchiveBytes > 0 && p.Size > cfg.MaxArchiveBytes {
		if p.Split() {
			return nil, failure.Limit("the %d archives would be %d bytes together; this deployment allows a run at most %d (MAX_ARCHIVE_BYTES bounds what a run writes: all of a split run's archives together)",
				len(p.Archives), p.Size, cfg.MaxArchiveBytes)
		}
		return nil, failure.Limit("archive would be %d bytes; this deployment allows at most %d (MAX_ARCHIVE_BYTES)", p.Size, cfg.MaxArchiveBytes)
	}
	return p, nil
}

// layoutOptions returns the options the layout is planned with. They carry
// the request's strategy, preference and part size for its workers, and
// price the plan with the deployment's model and what S3 stores of the
// sources' CRC-32s.
func layoutOptions(cfg Config, req *Request, stored *storedCRCs) plan.Options {
	strategy, _ := plan.ParseStrategy(req.Options.Strategy)
	prefer, _ := plan.ParsePreference(req.Options.Prefer)
	opts := plan.Options{Strategy: strategy, Prefer: prefer, PartSize: req.Options.PartSize, Workers: maxConcurrency(cfg, req), Model: cfg.Model, PartsPerBatch: cfg.PartsPerBatch, DirectoryPartSize: cfg.DirectoryPartSize}
	if stored.noted() {
		opts.StoresNoCRC = func(src plan.Source) bool { return stored.of(src) != "" }
	}
	return opts
}
