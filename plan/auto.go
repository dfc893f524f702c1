package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/s3zip/s3zip/internal/failure"
)

// makeAuto chooses among whole plans priced by the model, as opts.Prefer
// says. The candidates stream everything, chain a share of the duo
// layout's runs server-side, or take the chain layout.
func makeAuto(entries []Entry, opts Options) (*Plan, error) {
	a := newAutoChoice(entries, opts)
	if err := a.measure(); err != nil {
		return nil, err
	}
	cands := a.candidates()
	if len(cands) == 0 {
		return nil, failure.Limit("no plan of %d entries fits S3's limit of %d parts", len(entries), MaxParts)
	}
	for {
		p, drop, err := a.choose(cands)
		if err != nil || drop < 0 {
			return p, err
		}
		cands = slices.Delete(cands, drop, drop+1)
	}
}

// choose builds the plans the two preferences choose among cands and
// returns the one opts.Prefer takes, naming the other as its Alternative.
// Shares in between are priced by interpolation and a plan's own fit may
// differ from its candidate's, so the two plans are priced as built and
// the preferences' promises hold on those prices. A cost choice that breaks
// its bound as built is returned as drop, its index in cands, for another
// round; otherwise drop is -1. The other plan is priced and dropped first,
// so one plan at a time is in memory.
func (a *autoChoice) choose(cands []candidate) (p *Plan, drop int, err error) {
	preds := make([]Prediction, len(cands))
	for i, c := range cands {
		preds[i] = c.pred
	}
	prefer := a.opts.Prefer
	bi, oi := choose(preds, prefer), choose(preds, opposite(prefer))
	best, other := cands[bi].k, cands[oi].k
	if best == other {
		p, err := a.fitted(best)
		return p, -1, err
	}
	op, err := a.fitted(other)
	if err != nil {
		return nil, -1, err
	}
	alt := op.Predict(a.model)
	op = nil
	if p, err = a.fitted(best); err != nil {
		return nil, -1, err
	}
	mine := p.Predict(a.model)
	byTime, byCost, costAt := mine, alt, oi
	if prefer == PreferCost {
		byTime, byCost, costAt = alt, mine, bi
	}
	if byCost.Seconds > CostPreferenceSlack*byTime.Seconds && byCost.Dollars < byTime.Dollars {
		// The cheaper plan, as built, is slower than preferring cost
		// allows, so it is no candidate.
		return nil, costAt, nil
	}
	if breaksPromise(prefer, mine, alt) {
		// The other preference's choice wins on this one's terms too. That
		// preference keeps it, unless this plan wins on its terms, and then
		// each takes the other's.
		if p, err = a.fitted(other); err != nil {
			return nil, -1, err
		}
		if !breaksPromise(opposite(prefer), alt, mine) {
			return p, -1, nil // both preferences choose this plan
		}
		alt = mine
	} else if breaksPromise(opposite(prefer), alt, mine) || alt == mine {
		return p, -1, nil // the other preference takes this plan too, or one priced the same
	}
	p.Alternative = &Alternative{Prefer: opposite(prefer), Seconds: alt.Seconds, Dollars: alt.Dollars}
	return p, -1, nil
}

// fitted returns candidate k's plan, fitted to its workers.
func (a *autoChoice) fitted(k int) (*Plan, error) {
	p, err := a.build(k)
	if err != nil {
		return nil, err
	}
	p.Strategy = StrategyAuto
	return p.fitted(a.opts)
}

// breaksPromise says whether the plan chosen for prefer, priced mine, is
// worse by that preference than the other preference's choice, priced
// other. Worse is dearer when preferring cost, slower when preferring time.
func breaksPromise(prefer Preference, mine, other Prediction) bool {
	if prefer == PreferCost {
		return mine.Dollars > other.Dollars
	}
	return mine.Seconds > other.Seconds
}

// autoChoice holds auto's candidates. k = -1 streams everything, k from 0
// to 8 chains k eighths of the duo layout's runs, and k = chainAll is the
// chain layout, whose runs need no streamed prefix in front of a copy and
// whose rounds are fewer. At one worker that is the fastest plan by far, as
// docs/strategies.md shows. Only predictions are kept, and the chosen plan
// is built again, so that one plan at a time is in memory.
type autoChoice struct {
	entries []Entry
	opts    Options
	model   Model
	run     Run
	duo     layout
	// For the candidates built, -1, 0 and 8, stats and heads hold their
	// stats and HEADs up front, and batched their time and cost batch by
	// batch as their Fit cuts them over those spread evenly. A share in
	// between takes the ratios in between.
	stats   map[int]Stats
	heads   map[int]int
	batched map[int][2]float64
}

// newAutoChoice is auto's choice over entries, nothing measured yet.
func newAutoChoice(entries []Entry, opts Options) *autoChoice {
	return &autoChoice{entries: entries, opts: opts, model: opts.model(), run: Run{Workers: opts.Workers, Orchestrated: true},
		duo: duoLayout(entries), stats: map[int]Stats{}, heads: map[int]int{}, batched: map[int][2]float64{}}
}

// chainAll is the candidate that is the chain layout, every run chained.
const chainAll = 9

// candidate is a share k of chained runs and its prediction.
type candidate struct {
	k    int
	pred Prediction
}

// build plans candidate k.
func (a *autoChoice) build(k int) (*Plan, error) {
	sub := a.opts
	switch k {
	case -1:
		// As --strategy stream plans it, with parts large enough to fit S3's
		// limit, however large the archive.
		sub.Strategy = StrategyStream
		sub.PartSize = fitPartSize(a.entries, sub.PartSize, sub.Workers)
		return planWith(a.entries, streamLayout(a.entries), sub, func(span) bool { return false })
	case chainAll:
		sub.Strategy = StrategyAuto
		return planWith(a.entries, chainLayout(a.entries), sub, func(span) bool { return true })
	}
	acc := 0.0
	sub.Strategy = StrategyAuto
	return planWith(a.entries, a.duo, sub, func(span) bool {
		acc += float64(k) / 8
		if acc >= 1-1e-9 {
			acc--
			return true
		}
		return false
	})
}

// measure builds the stream, no-chain, all-chain and chain-layout
// candidates and keeps what pricing them needs. One that does not fit a
// limit is left out, and so is the chain layout when chainFloor says it
// cannot be the fastest, since over many small objects building it would
// only cost the planner time.
func (a *autoChoice) measure() error {
	fastest := math.Inf(1)
	for _, k := range []int{-1, 0, 8, chainAll} {
		if k == chainAll && a.chainFloor() >= fastest*(1-TimeSlack) {
			continue
		}
		p, err := a.build(k)
		if err != nil {
			var le *failure.LimitError
			if isLimit(err, &le) {
				continue // this candidate does not fit; others may
			}
			return err
		}
		parts := p.partsStats()
		a.stats[k], a.batched[k] = p.statsOf(parts), [2]float64{1, 1}
		a.heads[k] = len(p.CRCsNeeded())
		r := a.run
		r.HeadsUpFront = a.heads[k]
		spread := a.model.Predict(a.stats[k], r)
		_, fit := fitRun(p, parts, a.stats[k], a.opts, a.model)
		if spread.Seconds > 0 && spread.Dollars > 0 {
			a.batched[k] = [2]float64{fit.Seconds / spread.Seconds, fit.Dollars / spread.Dollars}
		}
		fastest = math.Min(fastest, fit.Seconds)
	}
	return nil
}

// chainFloor returns less than any time the chain layout can take. That is
// what every run waits for, start, listing and finalizer, plus its rounds,
// or S3's rates if that is longer. Every entry costs its chain a round of
// two round trips one after the other, and at most Concurrency rounds run
// at once on each worker. A chain layout that cannot beat the fastest plan
// by more than TimeSlack is not built, since at a tie its rounds' requests
// make it the dearer.
func (a *autoChoice) chainFloor() float64 {
	m, n := a.model, len(a.entries)
	rounds := float64(n) * 2 * m.RequestLatency / float64(max(m.Concurrency, 1)*max(a.opts.Workers, 1))
	// Every entry's bytes are copied from its source at least once, as
	// another layout reads them, and its round writes the work area at
	// least a create, a copy of what is built, a piece, a complete and a
	// delete.
	rate := m.S3Rates(Stats{ChainRounds: n, Requests: Requests{UploadPartCopy: 2 * n, Create: n, Complete: n, Delete: n}}).Seconds
	return m.StartSeconds + m.FinishSeconds + m.listSeconds(n) + math.Max(rounds, rate)
}

// candidates prices every share, those built as measured and those in
// between with stats interpolated between none and all chained.
func (a *autoChoice) candidates() []candidate {
	var cands []candidate
	for k := -1; k <= chainAll; k++ {
		st, ok := a.stats[k]
		h, ratio := a.heads[k], a.batched[k]
		if !ok && k > 0 && k < 8 {
			s0, ok0 := a.stats[0]
			s8, ok8 := a.stats[8]
			if !ok0 || !ok8 {
				continue
			}
			f := float64(k) / 8
			st, h, ok = mixStats(s0, s8, f), int(float64(a.heads[0])*(1-f)+float64(a.heads[8])*f), true
			for i := range ratio {
				ratio[i] = a.batched[0][i]*(1-f) + a.batched[8][i]*f
			}
		}
		if !ok {
			continue
		}
		r := a.run
		r.HeadsUpFront = h
		pred := a.model.Predict(st, r)
		pred.Seconds *= ratio[0]
		pred.Dollars *= ratio[1]
		cands = append(cands, candidate{k, pred})
	}
	return cands
}

// Preference is what auto minimises.
type Preference string

const (
	// PreferTime takes the fastest plan, or a cheaper one within
	// TimeSlack of its time.
	PreferTime Preference = "time"
	// PreferCost is the cheapest plan whose predicted time is within
	// CostPreferenceSlack of the plan PreferTime takes.
	PreferCost Preference = "cost"
)

// TimeSlack is how much slower than the fastest plan the plan preferring
// time may be when it is cheaper. A plan 0.3 % faster for a third more is
// not worth taking, and predictions are not that exact. It is small, so
// that more workers never choose a plan slower than fewer did by more than
// it, since a plan run on more workers is no slower.
const TimeSlack = 0.02

// CostPreferenceSlack is how much slower than the plan preferring time a
// plan preferred for its cost may be.
const CostPreferenceSlack = 1.5

// ParsePreference reads a preference; "" is PreferTime.
func ParsePreference(s string) (Preference, error) {
	switch Preference(s) {
	case "", PreferTime:
		return PreferTime, nil
	case PreferCost:
		return PreferCost, nil
	}
	return "", fmt.Errorf("prefer %q: want time or cost", s)
}

func opposite(p Preference) Preference {
	if p == PreferCost {
		return PreferTime
	}
	return PreferCost
}

// Alternative is the plan auto did not choose, as predicted.
type Alternative struct {
	Prefer  Preference `json:"prefer"`
	Seconds float64    `json:"seconds"`
	Dollars float64    `json:"dollars"`
}

// choose picks among predictions. For time it takes the cheapest within
// TimeSlack of the fastest; for cost, the cheapest at most
// CostPreferenceSlack times as slow as time's choice, so preferring cost
// never costs more. Ties go to the first, so the choice is deterministic.
func choose(preds []Prediction, prefer Preference) int {
	fastest := slices.MinFunc(preds, func(a, b Prediction) int { return cmp.Compare(a.Seconds, b.Seconds) }).Seconds
	limit := fastest * (1 + TimeSlack)
	if prefer == PreferCost {
		limit = CostPreferenceSlack * preds[cheapestWithin(preds, limit)].Seconds
	}
	return cheapestWithin(preds, limit)
}

// cheapestWithin is the cheapest prediction at most limit seconds long,
// the faster of equals, the first of ties.
func cheapestWithin(preds []Prediction, limit float64) int {
	best := -1
	for i, p := range preds {
		if p.Seconds > limit {
			continue
		}
		if best < 0 || cmp.Or(cmp.Compare(p.Dollars, preds[best].Dollars), cmp.Compare(p.Seconds, preds[best].Seconds)) < 0 {
			best = i
		}
	}
	return best
}

// mixStats returns a·(1-f) + b·f, field by field.
func mixStats(a, b Stats, f float64) Stats {
	mi := func(x, y int) int { return int(math.Round(float64(x)*(1-f) + float64(y)*f)) }
	m64 := func(x, y int64) int64 { return int64(math.Round(float64(x)*(1-f) + float64(y)*f)) }
	return Stats{
		Entries: a.Entries, ArchiveBytes: a.ArchiveBytes, Zip64: a.Zip64,
		StreamedBytes: m64(a.StreamedBytes, b.StreamedBytes), PipedBytes: m64(a.PipedBytes, b.PipedBytes), CopiedBytes: m64(a.CopiedBytes, b.CopiedBytes),
		ServerCopiedBytes: m64(a.ServerCopiedBytes, b.ServerCopiedBytes),
		Parts:             mi(a.Parts, b.Parts), UploadParts: mi(a.UploadParts, b.UploadParts), CopyParts: mi(a.CopyParts, b.CopyParts),
		ChainParts: mi(a.ChainParts, b.ChainParts), ChainRounds: mi(a.ChainRounds, b.ChainRounds),
		LongestChain: map[bool]int{true: b.LongestChain, false: a.LongestChain}[f > 0], // any chained run may be the longest
		ChainSteps:   mi(a.ChainSteps, b.ChainSteps), ChainHeads: mi(a.ChainHeads, b.ChainHeads), LongestChainSteps: map[bool]int{true: b.LongestChainSteps, false: a.LongestChainSteps}[f > 0],
		Requests: Requests{
			Get: mi(a.Requests.Get, b.Requests.Get), Head: mi(a.Requests.Head, b.Requests.Head),
			UploadPart: mi(a.Requests.UploadPart, b.Requests.UploadPart), UploadPartCopy: mi(a.Requests.UploadPartCopy, b.Requests.UploadPartCopy),
			Create: mi(a.Requests.Create, b.Requests.Create), Complete: mi(a.Requests.Complete, b.Requests.Complete), Delete: mi(a.Requests.Delete, b.Requests.Delete),
		},
	}
}

func isLimit(err error, target **failure.LimitError) bool {
	le, ok := err.(*failure.LimitError)
	if ok {
		*target = le
	}
	return ok
}
