package plan

import (
	"fmt"
	"slices"
)

// Fit is how a plan is run on the workers it is planned for. It holds the
// batch the Distributed Map hands one worker invocation, how many workers
// those batches keep busy, and how many parts a worker builds at once. Make
// chooses it with the model and the planner writes it into the job, where
// the Map reads the batch and the concurrency and the worker honours
// InFlight, so what the model priced is what runs.
type Fit struct {
	// Workers is how many workers the plan uses, at most Options.Workers and
	// fewer when there are fewer batches than workers.
	Workers int `json:"workers"`
	// PartsPerBatch is the most part jobs in one batch, the Map's
	// MaxItemsPerBatch; a batch also ends before its jobs pass
	// MaxJobBytes.
	PartsPerBatch int `json:"partsPerBatch"`
	// Batches is how many batches, so worker invocations, the Map makes.
	Batches int `json:"batches"`
	// InFlight is the parts one worker builds at once, the model's
	// Concurrency.
	InFlight int `json:"inFlight"`
	// Why says why Workers and PartsPerBatch are what they are.
	Why string `json:"why"`
}

// MaxBatchSeconds bounds a batch's predicted time. Lambda ends a worker
// invocation after at most 900 s, and a batch cut off near it fails with a
// DeadlineError and is built again whole, so batches leave it half.
const MaxBatchSeconds = 450

// fitSlack is how much slower than the fastest cut a cut with fewer
// batches may be and still be chosen, since fewer child executions cost less.
const fitSlack = 1.01

// fitRun cuts a plan's part jobs into batches for opts.Workers and prices
// the run. It tries the batch sizes that give every worker one, two or four
// batches, and the powers of two, keeps those predicted to take at most
// MaxBatchSeconds a batch, size 1 always among them, and takes the fastest
// or a cheaper one within fitSlack of it. Small batches spread the work;
// large ones keep a worker's InFlight parts busy when workers are few, and
// launch fewer child executions when the Map's launch rate bounds the run.
// A batch size the deployment fixed in opts.PartsPerBatch is the only one.
func fitRun(p *Plan, parts []Stats, st Stats, opts Options, m Model) (Fit, Prediction) {
	workers := max(opts.Workers, 1)
	sizes := p.jobBytes()
	jobs := 0
	for i := range p.WorkerParts() {
		if !p.Carried(i) {
			jobs++
		}
	}
	pers := []int{opts.PartsPerBatch}
	if opts.PartsPerBatch <= 0 {
		pers = pers[:0]
		for _, k := range []int{1, 2, 4} {
			pers = append(pers, max(1, int(ceilDiv(int64(jobs), int64(k*workers)))))
		}
		for b := 1; b < 2*jobs; b *= 2 {
			pers = append(pers, b)
		}
		slices.Sort(pers)
		pers = slices.Compact(pers)
	}
	heads := len(p.CRCsNeeded())
	var best Fit
	var bestPred Prediction
	var fastest float64
	quickest := 0 // index of the fastest cut
	preds := make([]Prediction, len(pers))
	loads := make([][]Load, len(pers))
	fits := make([]bool, len(pers))
	for i, per := range pers {
		loads[i] = p.loadsOf(parts, sizes, per)
		fits[i] = per == 1 || per == opts.PartsPerBatch || !slices.ContainsFunc(loads[i], func(l Load) bool { return m.batchSeconds(l) > MaxBatchSeconds })
		preds[i] = m.Predict(st, Run{Workers: workers, Orchestrated: true, HeadsUpFront: heads, Loads: loads[i], InFlight: m.Concurrency})
		if fits[i] && (fastest == 0 || preds[i].Seconds < fastest) {
			fastest, quickest = preds[i].Seconds, i
		}
	}
	for i, per := range pers {
		if !fits[i] || preds[i].Seconds > fastest*fitSlack || best.PartsPerBatch > 0 && preds[i].Dollars >= bestPred.Dollars {
			continue
		}
		best, bestPred = Fit{Workers: min(workers, max(len(loads[i]), 1)), PartsPerBatch: per, Batches: len(loads[i]), InFlight: m.Concurrency}, preds[i]
	}
	switch {
	case jobs == 0:
		best.Why = "no part jobs: the finalizer builds the whole archive"
	case opts.PartsPerBatch > 0 && best.Workers < workers:
		best.Why = fmt.Sprintf("the deployment fixes batches of at most %d part jobs: %d batches leave none for more workers", best.PartsPerBatch, best.Batches)
	case opts.PartsPerBatch > 0:
		best.Why = fmt.Sprintf("the deployment fixes batches of at most %d part jobs: %d batches, %d parts at a time on each worker", best.PartsPerBatch, best.Batches, best.InFlight)
	case jobs < workers && best.Workers == jobs:
		best.Why = fmt.Sprintf("%d part jobs for %d workers: one each", jobs, workers)
	case bestPred.Seconds > fastest+0.005: // slower by what the summary shows
		best.Why = fmt.Sprintf("%d batches of at most %d part jobs, %d parts at a time on each worker: %.2f s predicted, within %.0f%% of the fastest cut (%.2f s, %d batches) and $%.4f cheaper: fewer child executions",
			best.Batches, best.PartsPerBatch, best.InFlight, bestPred.Seconds, 100*(fitSlack-1), fastest, len(loads[quickest]), preds[quickest].Dollars-bestPred.Dollars)
	case best.Workers < workers:
		best.Why = fmt.Sprintf("%d batches of at most %d part jobs, %d parts at a time on each worker: the fastest cut predicted; smaller batches for more workers are not faster, each one more child execution for the Map to launch (%.0f a second)",
			best.Batches, best.PartsPerBatch, best.InFlight, m.LaunchRate)
	default:
		best.Why = fmt.Sprintf("%d batches of at most %d part jobs, %d parts at a time on each worker: the fastest cut predicted", best.Batches, best.PartsPerBatch, best.InFlight)
	}
	return best, bestPred
}

// Predict prices the plan with m as its Fit runs it, batch by batch on
// the workers it uses with their parts in flight, as the deployed Map runs
// it when m is the model it was planned with.
func (p *Plan) Predict(m Model) Prediction {
	return m.Predict(p.Stats(), Run{Workers: p.Fit.Workers, Orchestrated: true, HeadsUpFront: len(p.CRCsNeeded()), Loads: p.Loads(p.Fit.PartsPerBatch), InFlight: p.Fit.InFlight})
}

// S3Rates returns what the plan asks of S3's per-prefix rates, run as its
// Fit cuts it, priced with m.
func (p *Plan) S3Rates(m Model) RateDemand {
	parts := p.partsStats()
	return m.S3Rates(p.statsOf(parts).batched(p.loadsOf(parts, p.jobBytes(), max(p.Fit.PartsPerBatch, 1))))
}

// fitted sets the plan's Fit for opts.
func (p *Plan) fitted(opts Options) (*Plan, error) {
	parts := p.partsStats()
	p.Fit, _ = fitRun(p, parts, p.statsOf(parts), opts, opts.model())
	return p, nil
}

// model returns the profile plans are priced with, opts.Model or else AWS's.
func (opts Options) model() Model {
	if opts.Model != nil {
		return *opts.Model
	}
	return DefaultModel
}
