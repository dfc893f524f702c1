package main

import (
	"github.com/s3zip/s3zip/plan"
)

// chainAdvice returns what `plan` says when chain was asked for on a set
// where it is the wrong tool, or "" when chain is a fair choice or was not
// asked for. Tiny objects make it the wrong tool, with a round per entry
// taking minutes where auto takes seconds. `create` says the same through
// the planner's warning in workflow.
func chainAdvice(p *plan.Plan, entries []plan.Entry, opts plan.Options) (string, error) {
	if opts.Strategy != plan.StrategyChain {
		return "", nil
	}
	a, err := plan.AdviseChain(p, entries, opts)
	if a == nil || err != nil {
		return "", err
	}
	return a.String(), nil
}
