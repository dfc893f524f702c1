package plan

import (
	"fmt"

	"github.com/s3zip/s3zip/internal/partwork"
)

// ChainAdvice says that chain is the wrong tool for a set of entries, since
// auto's plan is predicted to be much faster. Chains build each part one
// round after another, a round of four requests per local header and per
// object under 5 MiB. That pays when objects are big and bandwidth is the
// limit, and takes minutes over thousands of tiny objects that auto streams
// in seconds.
type ChainAdvice struct {
	Entries      int
	ChainRounds  int
	LongestChain int // rounds of the longest chain part, built one after another
	Chain, Auto  Prediction
	Workers      int
	// Rates is what the chain plan asks of S3's request rates. When they,
	// not the rounds' round trips, set its time, the advice says so.
	Rates RateDemand
}

// chainSlower is how many times slower than auto's a chain plan must be
// predicted before chain is called the wrong tool, since the model is a model.
const chainSlower = 2

// AdviseChain compares a chain plan of entries with auto's under the same
// options and returns advice when auto is predicted at least chainSlower
// times faster, or nil when chain is a fair choice.
func AdviseChain(chain *Plan, entries []Entry, opts Options) (*ChainAdvice, error) {
	model := DefaultModel
	if opts.Model != nil {
		model = *opts.Model
	}
	opts.Strategy = StrategyAuto
	auto, err := Make(entries, opts)
	if err != nil {
		return nil, err
	}
	run := Run{Workers: max(opts.Workers, 1), Orchestrated: true}
	cs := chain.Stats()
	a := &ChainAdvice{Entries: cs.Entries, ChainRounds: cs.ChainRounds, Workers: run.Workers}
	for i := range chain.Parts {
		p := &chain.Parts[i]
		if p.Kind == PartChain {
			a.LongestChain = max(a.LongestChain, len(partwork.ChainRounds(chain.Entries[p.First:p.First+EntryIndex(p.Count)], p.Start, p.End)))
		}
	}
	r := run
	r.HeadsUpFront = len(chain.CRCsNeeded())
	a.Chain = model.Predict(cs, r)
	a.Rates = chain.S3Rates(model)
	r.HeadsUpFront = len(auto.CRCsNeeded())
	a.Auto = model.Predict(auto.Stats(), r)
	if a.Chain.Seconds < chainSlower*a.Auto.Seconds {
		return nil, nil
	}
	return a, nil
}

func (a *ChainAdvice) String() string {
	why := "chains pay for big objects when bandwidth is the limit"
	if w := a.Rates.Work; a.Rates.Binds == "work area" && a.Rates.Seconds >= a.Chain.WorkerSecs {
		why = fmt.Sprintf("its rounds write the run's work area %d times, and S3 serves one new prefix %.0f writes a second (%.1f s)", w.Writes, w.WriteRate, w.Seconds)
	}
	return fmt.Sprintf("chain is the wrong tool for these %d entries: it builds %d rounds (the longest part %d in a row, four requests each), "+
		"predicted %.1f s and $%.4f on AWS with %d workers, where auto is predicted %.1f s and $%.4f; "+
		"%s: drop --strategy chain (or use auto)",
		a.Entries, a.ChainRounds, a.LongestChain, a.Chain.Seconds, a.Chain.Dollars, a.Workers, a.Auto.Seconds, a.Auto.Dollars, why)
}
