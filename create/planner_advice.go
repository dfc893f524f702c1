package create

import (
	"log/slog"

	"github.com/s3zip/s3zip/plan"
)

// warnWrongTool warns, before any part is built, when the request asked for
// chain on a set where it is the wrong tool, and logs both predictions.
// Thousands of tiny objects cost chain a round per entry, minutes where auto
// takes seconds. `s3zip create` shows the warning on stderr and the Lambda
// logs it.
func warnWrongTool(log *slog.Logger, p *plan.Plan, entries []plan.Entry, opts plan.Options) {
	if opts.Strategy != plan.StrategyChain {
		return
	}
	a, err := plan.AdviseChain(p, entries, opts)
	if err != nil || a == nil {
		return // the advice is optional, and a plan auto cannot make changes nothing here
	}
	log.Warn(a.String(), "chainSeconds", a.Chain.Seconds, "chainDollars", a.Chain.Dollars, "autoSeconds", a.Auto.Seconds, "autoDollars", a.Auto.Dollars)
}
