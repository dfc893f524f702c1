package main

import (
	"github.com/s3zip/s3zip/plan"
)

// chainAdvice is what `plan` says when chain was asked for on a set where
// it is the wrong tool (tiny objects: a round per entry, minutes where auto
// takes seconds), or "" when chain is a fair choice or was not asked for.
// `create` says the same through the planner's warning (workflow).
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
