package workflow

import (
	"context"
	"fmt"

	"github.com/s3zip/s3zip/plan"
)

// layOut plans the archive from its entries and checks it against the
// deployment's size limit. The CRC-32s its workers need are learned after
// (learnCRCs).
func (pl *Planner) layOut(ctx context.Context, cfg Config, req *Request, entries []plan.Entry, execution string) (*plan.Plan, error) {
	strategy, _ := plan.ParseStrategy(req.Options.Strategy)
	concurrency := maxConcurrency(cfg, req)
	prefer, _ := plan.ParsePreference(req.Options.Prefer)
	opts := plan.Options{Strategy: strategy, Prefer: prefer, PartSize: req.Options.PartSize, Workers: concurrency, Model: cfg.Model, PartsPerBatch: cfg.PartsPerBatch, DirectoryPartSize: cfg.DirectoryPartSize}
	p, err := plan.Make(entries, opts)
	if err != nil {
		return nil, planError(err)
	}
	warnWrongTool(pl.runLog(execution, req), p, entries, opts)
	if cfg.MaxArchiveBytes > 0 && p.Size > cfg.MaxArchiveBytes {
		return nil, &LimitError{fmt.Sprintf("archive would be %d bytes; this deployment allows at most %d (MAX_ARCHIVE_BYTES)", p.Size, cfg.MaxArchiveBytes)}
	}
	return p, nil
}
