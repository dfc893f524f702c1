package plan

import (
	"fmt"
	"math"
)

// Model predicts the wall time and the dollar cost of building a plan on
// AWS with a number of workers. It is a model, not a measurement: its
// platform numbers are assumptions, stated here, and it is checked against
// the published records in model_test.go.
type Model struct {
	// WorkerBandwidth is what one Lambda moves each way, bytes/s
	// (~600 Mbit/s observed; download and upload overlap).
	WorkerBandwidth float64
	// RequestLatency is a small S3 request's round trip.
	RequestLatency float64
	// CopyRate is the server-side copy rate of one UploadPartCopy, bytes/s.
	CopyRate float64
	// Concurrency is S3 requests one worker keeps in flight (copies, HEADs,
	// chain rounds; streaming is bound by bandwidth instead).
	Concurrency int
	// StartSeconds is the fixed cost of starting a run: the state machine's
	// transitions and the planner's invocation.
	StartSeconds float64
	// LaunchRate is how many workers per second the Distributed Map starts
	// (child executions and Lambda invocations, cold starts included).
	LaunchRate float64
	// FinishSeconds is the finalizer's fixed cost; CompletePerPart the
	// extra time CompleteMultipartUpload takes per part.
	FinishSeconds, CompletePerPart float64
	// ListPageSeconds is one ListObjectsV2 page of 1,000 keys.
	ListPageSeconds float64

	// Prices, us-east-1 (USD).
	PricePutPer1000     float64 // PUT, COPY, POST, LIST
	PriceGetPer1000     float64 // GET, HEAD
	PriceLambdaGBSecond float64 // arm64
	PriceLambdaRequest  float64
	PriceTransition     float64 // Step Functions standard state transition
	WorkerMemoryGB      float64
}

// DefaultModel is the model with its stated assumptions.
var DefaultModel = Model{
	WorkerBandwidth: 75e6, RequestLatency: 0.025, CopyRate: 200e6, Concurrency: 100,
	StartSeconds: 0.8, LaunchRate: 400, FinishSeconds: 0.6, CompletePerPart: 0.0004, ListPageSeconds: 0.1,
	PricePutPer1000: 0.005, PriceGetPer1000: 0.0004, PriceLambdaGBSecond: 0.0000133334, PriceLambdaRequest: 0.2e-6,
	PriceTransition: 0.000025, WorkerMemoryGB: 1.769,
}

// Run describes how a plan is executed: by Workers at once, fanned out by
// the state machine (Orchestrated) or inside one process (the published
// single-Lambda designs).
type Run struct {
	Workers      int
	Orchestrated bool
	// HeadsUpFront are HEADs made before the workers start (CRCs).
	HeadsUpFront int
}

// Prediction is a predicted run.
type Prediction struct {
	Seconds      float64 `json:"seconds"`
	Dollars      float64 `json:"dollars"`
	WorkerSecs   float64 `json:"workerSeconds"` // the busiest worker
	StreamSecs   float64 `json:"streamSeconds"`
	RequestSecs  float64 `json:"requestSeconds"`
	OverheadSecs float64 `json:"overheadSeconds"`
}

func (m Model) String() string {
	return fmt.Sprintf("%.0f Mbit/s per worker, %.0f ms per request, %.0f MB/s per copy, %d requests in flight per worker",
		m.WorkerBandwidth*8/1e6, m.RequestLatency*1000, m.CopyRate/1e6, m.Concurrency)
}

// Predict prices a plan's stats run as r.
func (m Model) Predict(s Stats, r Run) Prediction {
	w := float64(max(r.Workers, 1))
	// Work spreads over the workers by parts; the busiest gets the ceiling.
	parts := float64(max(s.Parts-1, 1))
	share := math.Ceil(parts/w) / parts
	if parts < w {
		share = 1 / parts
	}
	conc := float64(m.Concurrency)
	stream := float64(s.StreamedBytes) * share / m.WorkerBandwidth
	// Requests a worker makes, each a round trip, Concurrency at a time;
	// chain rounds are four requests in a row; copies move bytes at CopyRate.
	reqs := float64(s.Requests.UploadPartCopy+s.Requests.Get) * share
	chainSeq := float64(s.ChainRounds*4) * share
	copySecs := float64(s.ServerCopiedBytes) * share / m.CopyRate
	requests := (reqs+chainSeq)*m.RequestLatency/conc + copySecs/conc
	// A chain part's rounds run one after another, however many requests a
	// worker could keep in flight: its longest chain is a floor.
	requests = math.Max(requests, float64(s.LongestChain*4)*m.RequestLatency)
	worker := math.Max(stream, requests)

	overhead := float64(ceilDiv(int64(s.Entries), 1000))*m.ListPageSeconds +
		float64(r.HeadsUpFront)*m.RequestLatency/conc + m.FinishSeconds + float64(s.Parts)*m.CompletePerPart
	if r.Orchestrated {
		overhead += m.StartSeconds + w/m.LaunchRate
	}
	p := Prediction{WorkerSecs: worker, StreamSecs: stream, RequestSecs: requests, OverheadSecs: overhead}
	p.Seconds = worker + overhead

	// Cost: requests, Lambda time (every worker is billed for its share),
	// state transitions (about three per child execution and ten for the run).
	put := s.Requests.UploadPart + s.Requests.UploadPartCopy + s.Requests.Create + s.Requests.Complete + int(ceilDiv(int64(s.Entries), 1000))
	get := s.Requests.Get + s.Requests.Head + r.HeadsUpFront
	lambdaSecs := worker*w + overhead
	p.Dollars = float64(put)/1000*m.PricePutPer1000 + float64(get)/1000*m.PriceGetPer1000 +
		lambdaSecs*m.WorkerMemoryGB*m.PriceLambdaGBSecond + (w+3)*m.PriceLambdaRequest
	if r.Orchestrated {
		p.Dollars += (10 + 3*w) * m.PriceTransition
	}
	return p
}

// makeAuto plans the duo layout and chooses which of its runs to build
// server-side (chain) and which to stream: the fastest choice whose
// predicted cost is at most CostCap times the cheapest one's; the stream
// plan competes too.
func makeAuto(entries []Entry, opts Options) (*Plan, error) {
	model := DefaultModel
	if opts.Model != nil {
		model = *opts.Model
	}
	capRatio := opts.CostCap
	if capRatio <= 0 {
		capRatio = 2
	}
	run := Run{Workers: opts.Workers, Orchestrated: true}
	// Candidates: stream everything, or the duo layout with a share of its
	// runs chained (0, 1/8, …, all). Only predictions are kept; the chosen
	// plan is built again, so that one plan at a time is in memory.
	duo := duoLayout(entries)
	build := func(k int) (*Plan, error) {
		sub := opts
		if k < 0 {
			sub.Strategy = StrategyStream
			return planWith(entries, streamLayout(entries), sub, func(span) bool { return false })
		}
		acc := 0.0
		sub.Strategy = StrategyAuto
		return planWith(entries, duo, sub, func(span) bool {
			acc += float64(k) / 8
			if acc >= 1-1e-9 {
				acc--
				return true
			}
			return false
		})
	}
	// Stats of a share of chained runs are interpolated between none and all.
	type candidate struct {
		k    int
		pred Prediction
	}
	var cands []candidate
	stats := map[int]Stats{}
	heads := map[int]int{}
	for _, k := range []int{-1, 0, 8} {
		p, err := build(k)
		if err != nil {
			var le *LimitError
			if isLimit(err, &le) {
				continue // this candidate does not fit; others may
			}
			return nil, err
		}
		stats[k], heads[k] = p.Stats(), len(p.CRCsNeeded())
	}
	for k := -1; k <= 8; k++ {
		st, ok := stats[k]
		h := heads[k]
		if !ok && k > 0 && k < 8 {
			s0, ok0 := stats[0]
			s8, ok8 := stats[8]
			if !ok0 || !ok8 {
				continue
			}
			f := float64(k) / 8
			st, h, ok = mixStats(s0, s8, f), int(float64(heads[0])*(1-f)+float64(heads[8])*f), true
		}
		if !ok {
			continue
		}
		r := run
		r.HeadsUpFront = h
		cands = append(cands, candidate{k, model.Predict(st, r)})
	}
	if len(cands) == 0 {
		return nil, &LimitError{fmt.Sprintf("no plan of %d entries fits S3's limit of %d parts", len(entries), MaxParts)}
	}
	cheapest := cands[0].pred.Dollars
	for _, c := range cands {
		cheapest = math.Min(cheapest, c.pred.Dollars)
	}
	best := -1
	for i, c := range cands {
		if c.pred.Dollars <= capRatio*cheapest && (best < 0 || c.pred.Seconds < cands[best].pred.Seconds) {
			best = i
		}
	}
	p, err := build(cands[best].k)
	if err != nil {
		return nil, err
	}
	p.Strategy = StrategyAuto
	return p, nil
}

// mixStats is (1-f)·a + f·b, field by field.
func mixStats(a, b Stats, f float64) Stats {
	mi := func(x, y int) int { return int(math.Round(float64(x)*(1-f) + float64(y)*f)) }
	m64 := func(x, y int64) int64 { return int64(math.Round(float64(x)*(1-f) + float64(y)*f)) }
	return Stats{
		Entries: a.Entries, ArchiveBytes: a.ArchiveBytes, Zip64: a.Zip64,
		StreamedBytes: m64(a.StreamedBytes, b.StreamedBytes), CopiedBytes: m64(a.CopiedBytes, b.CopiedBytes),
		ServerCopiedBytes: m64(a.ServerCopiedBytes, b.ServerCopiedBytes),
		Parts:             mi(a.Parts, b.Parts), UploadParts: mi(a.UploadParts, b.UploadParts), CopyParts: mi(a.CopyParts, b.CopyParts),
		ChainParts: mi(a.ChainParts, b.ChainParts), ChainRounds: mi(a.ChainRounds, b.ChainRounds),
		LongestChain: map[bool]int{true: b.LongestChain, false: a.LongestChain}[f > 0], // any chained run may be the longest
		Requests: Requests{
			Get: mi(a.Requests.Get, b.Requests.Get), Head: mi(a.Requests.Head, b.Requests.Head),
			UploadPart: mi(a.Requests.UploadPart, b.Requests.UploadPart), UploadPartCopy: mi(a.Requests.UploadPartCopy, b.Requests.UploadPartCopy),
			Create: mi(a.Requests.Create, b.Requests.Create), Complete: mi(a.Requests.Complete, b.Requests.Complete), Delete: mi(a.Requests.Delete, b.Requests.Delete),
		},
	}
}

func isLimit(err error, target **LimitError) bool {
	le, ok := err.(*LimitError)
	if ok {
		*target = le
	}
	return ok
}
