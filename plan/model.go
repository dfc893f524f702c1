package plan

import (
	"container/heap"
	"fmt"
	"math"
	"slices"

	"github.com/s3zip/s3zip/internal/partwork"
)

// Model predicts the wall time and the dollar cost of building a plan with a
// number of workers. DefaultModel is AWS's profile, checked against the
// published records in model_test.go; a local profile is calibrated by
// bench/netbench against the machine's S3 server.
//
// A run has two phases. The workers build the parts, as fast as the busiest
// worker or the server's capacity allows, then the finalizer completes the
// upload. On AWS the server's capacity fields are 0, unbounded next to the
// workers' links.
type Model struct {
	// WorkerBandwidth is the bytes per second one Lambda moves each way,
	// about 600 Mbit/s observed, with download and upload overlapping.
	WorkerBandwidth float64
	// RequestLatency is a small S3 request's round trip.
	RequestLatency float64
	// CopyRate is the server-side copy rate of one UploadPartCopy, bytes/s.
	CopyRate float64
	// Concurrency is the parts one worker builds at once, copies, chains and
	// streamed parts. A chain waits for its round trips one after another;
	// a streamed part is bound by bandwidth instead. The worker honours a
	// plan's Fit.InFlight as workflow Job.PartsInFlight.
	Concurrency int
	// UploadsInFlight is the most upload parts among them. Each holds its
	// bytes and a fan-out of GETs, so a worker assembles a few at a time,
	// the workflow's PART_CONCURRENCY, however many copies and chains it
	// keeps in flight. 0 is Concurrency.
	UploadsInFlight int
	// StartSeconds is the fixed cost of starting a run, the state machine's
	// transitions and the planner's invocation.
	StartSeconds float64
	// LaunchRate is how many workers per second the Distributed Map starts,
	// as child executions and Lambda invocations, cold starts included.
	LaunchRate float64
	// FinishSeconds is the finalizer's fixed cost; CompletePerPart the
	// extra time CompleteMultipartUpload takes per part.
	FinishSeconds, CompletePerPart float64
	// ListPageSeconds is the round trip of one ListObjectsV2 page of 1,000
	// keys. ListConcurrency is how many pages the planner keeps in flight,
	// s3prefix.DefaultListConcurrency or LIST_CONCURRENCY. ListPageCPUSeconds
	// is what decoding a page costs the vCPU, about 10 ms in tests/load
	// TestListingRate; it bounds a listing when many pages are in flight.
	ListPageSeconds, ListPageCPUSeconds float64
	ListConcurrency                     int
	// InvokeSeconds is the fixed cost of one batch of parts, a worker
	// invocation with its start, clients and result.
	InvokeSeconds float64
	// StreamPasses is how many times a streamed byte crosses a worker's
	// link one after the other. It is 1 where the worker pipes each GET into
	// its upload, as the published streaming designs do, and 2 where it
	// assembles a part and then sends it, as s3zip's worker does for a part
	// whose CRC-32s it can only learn by reading it. Stats.PipedBytes always
	// count once. 0 counts as 1.
	StreamPasses float64

	// The server's capacity is shared by every worker; 0 is unbounded.
	// ServerIngestRate and ServerGetRate are the bytes per second it takes in
	// with UploadPart and serves with GetObject, both at once, so the slower
	// bounds streaming; on one machine they include carrying the bytes to the
	// workers. ServerCopyRate is what all UploadPartCopy requests
	// copy together, ServerRequestRate the small requests per second.
	// CompletePerByte is a CompleteMultipartUpload's time per byte assembled,
	// on a server that concatenates parts, which S3 does not; chain rounds
	// wait for it one Complete after another, as bench/README.md measures.
	ServerIngestRate, ServerGetRate, ServerCopyRate, ServerRequestRate float64
	CompletePerByte                                                    float64

	// S3ReadRate and S3WriteRate are the requests per second S3 serves one
	// partitioned prefix, about 5,500 GET/HEAD and 3,500 PUT/COPY/POST/DELETE;
	// past them it answers 503 SlowDown, and internal/s3rate slows s3zip's
	// clients to them. 0 is unbounded. The sources' reads spread over
	// SourcePrefixes prefixes, where 0 counts as 1. S3Rates prices each group;
	// docs/strategies.md, section "At S3's request rates", says why.
	S3ReadRate, S3WriteRate float64
	SourcePrefixes          int

	// Prices in USD, us-east-1.
	PricePutPer1000     float64 // PUT, COPY, POST, LIST
	PriceGetPer1000     float64 // GET, HEAD
	PriceLambdaGBSecond float64 // arm64
	PriceLambdaRequest  float64
	PriceTransition     float64 // Step Functions standard state transition
	WorkerMemoryGB      float64
}

// DefaultModel is the model with its stated assumptions.
var DefaultModel = Model{
	WorkerBandwidth: 75e6, RequestLatency: 0.025, CopyRate: 200e6, Concurrency: 100, UploadsInFlight: 8,
	StartSeconds: 0.8, LaunchRate: 400, FinishSeconds: 0.6, CompletePerPart: 0.0004, ListPageSeconds: 0.1, ListPageCPUSeconds: 0.01, ListConcurrency: 16,
	PricePutPer1000: 0.005, PriceGetPer1000: 0.0004, PriceLambdaGBSecond: 0.0000133334, PriceLambdaRequest: 0.2e-6,
	PriceTransition: 0.000025, WorkerMemoryGB: 1.769, StreamPasses: 2,
	S3ReadRate: 5500, S3WriteRate: 3500,
}

// PipedModel is DefaultModel for a worker that pipes each GET into its
// upload, as the published streaming designs do; model_test.go checks the
// model against their records with it. Their sources' prefixes are not
// known, since their fan-out read some 7,000 requests' worth in about a
// second, so it leaves out S3's rates.
var PipedModel = func() Model { m := DefaultModel; m.StreamPasses = 1; m.S3ReadRate, m.S3WriteRate = 0, 0; return m }()

// Run describes how a plan is executed by Workers at once, fanned out by
// the state machine when Orchestrated, or else inside one process as the
// published single-Lambda designs do.
type Run struct {
	Workers      int
	Orchestrated bool
	// Loads are the batches the parts are built in, from Plan.Loads, in the
	// order the Distributed Map hands them out. With them the model
	// schedules each batch on the first free worker; without them it
	// spreads parts evenly.
	Loads []Load
	// HeadsUpFront are the HEADs for CRC-32s made before the workers start.
	HeadsUpFront int
	// InFlight is the parts one worker builds at once, Fit.InFlight, which
	// the worker honours; 0 is the model's Concurrency.
	InFlight int
}

// Prediction is a predicted run.
type Prediction struct {
	Seconds     float64 `json:"seconds"`
	Dollars     float64 `json:"dollars"`
	WorkerSecs  float64 `json:"workerSeconds"` // the busiest worker
	StreamSecs  float64 `json:"streamSeconds"`
	RequestSecs float64 `json:"requestSeconds"`
	ServerSecs  float64 `json:"serverSeconds"` // the server's share of the work, all workers together
	// RateSecs is the least time S3's request rates allow the workers'
	// requests, from S3Rates. The run takes at least that, however many
	// workers it has.
	RateSecs     float64 `json:"rateSeconds"`
	OverheadSecs float64 `json:"overheadSeconds"`
}

func (m Model) String() string {
	return fmt.Sprintf("%.0f Mbit/s per worker, %.0f ms per request, %.0f MB/s per copy, %d parts in flight per worker",
		m.WorkerBandwidth*8/1e6, m.RequestLatency*1000, m.CopyRate/1e6, m.Concurrency)
}

// Predict prices a plan's stats run as r.
func (m Model) Predict(s Stats, r Run) Prediction {
	if r.InFlight > 0 {
		m.Concurrency = r.InFlight
	}
	w := float64(max(r.Workers, 1))
	conc := float64(m.Concurrency)
	passes := math.Max(m.StreamPasses, 1)
	// children are the Map's child executions, one per worker invocation,
	// busy their time together.
	children, busy := w, 0.0
	var worker, stream, requests float64
	if len(r.Loads) > 0 {
		// Batches go to the first free worker, in order, and the run waits for
		// the last one. The Map starts no more children than batches, so a
		// worker with none is never launched nor billed.
		stream, requests = m.loadSeconds(Load{Stats: s}, passes)
		children = float64(len(r.Loads))
		w = math.Min(w, children)
		free := make(workerClock, int(w))
		heap.Init(&free)
		for _, l := range r.Loads {
			t := m.batchSeconds(l)
			free[0] += t
			busy += t
			heap.Fix(&free, 0)
		}
		worker = slices.Max(free)
	} else {
		// Work spreads over the workers by parts; the busiest gets the ceiling.
		parts := float64(max(s.Parts-1, 1))
		share := math.Ceil(parts/w) / parts
		if parts < w {
			share = 1 / parts
		}
		stream = m.streamSeconds(int64(float64(s.StreamedBytes)*share), int64(float64(s.PipedBytes)*share), int(math.Ceil(float64(s.UploadParts+s.ChainParts)*share)), passes)
		if s.UploadParts > 0 {
			stream += streamWaits * m.RequestLatency
		}
		// Requests a worker makes, each a round trip, Concurrency at a time;
		// a chain's steps one after another; copies move bytes at CopyRate.
		reqs := float64(s.Requests.UploadPartCopy+s.Requests.Get+max(s.Requests.Head-s.ChainHeads-r.HeadsUpFront, 0)) * share
		chainSeq := float64(s.ChainSteps) * share
		copySecs := float64(s.ServerCopiedBytes) * share / m.CopyRate
		requests = (reqs+chainSeq)*m.RequestLatency/conc + copySecs/conc
		// A chain part's steps run one after another, however many requests a
		// worker could keep in flight, so its longest chain is a floor.
		requests = math.Max(requests, float64(s.LongestChainSteps)*m.RequestLatency)
		worker = math.Max(stream, requests) + m.InvokeSeconds
		busy = worker * w
	}

	// A batch makes its probe upload and its CRC-32 document once, so they
	// are priced by the batches. A run priced without Loads, as auto prices
	// its shares before it cuts their batches, leaves them to the cut.
	if len(r.Loads) > 0 {
		s = s.batched(r.Loads)
	} else {
		s.JobReads, s.ProbeUploads, s.CRCDocs = 0, 0, 0
	}
	server := m.serverSeconds(s)
	overhead := m.overheadSeconds(s, r, w, children, conc)
	rates := m.S3Rates(s)
	p := Prediction{WorkerSecs: worker, StreamSecs: stream, RequestSecs: requests, ServerSecs: server, RateSecs: rates.Seconds, OverheadSecs: overhead}
	p.Seconds = math.Max(math.Max(worker, server), rates.Seconds) + overhead

	// The cost is the requests, the Lambda time and the state transitions.
	// Every invocation is billed for its time, and all of them for the
	// server's share while they wait. A child execution takes about three
	// transitions and the run ten.
	put := s.Requests.UploadPart + s.Requests.UploadPartCopy + s.Requests.Create + s.Requests.Complete + int(ceilDiv(int64(s.Entries), 1000))
	get := s.Requests.Get + max(s.Requests.Head, r.HeadsUpFront) // Stats' HEADs include the planner's
	// Workers held by the server, or by S3's rates, are billed while they wait.
	lambdaSecs := math.Max(busy, math.Max(server, rates.Seconds)*w) + overhead
	p.Dollars = float64(put)/1000*m.PricePutPer1000 + float64(get)/1000*m.PriceGetPer1000 +
		lambdaSecs*m.WorkerMemoryGB*m.PriceLambdaGBSecond + (children+3)*m.PriceLambdaRequest
	if r.Orchestrated {
		p.Dollars += (10 + 3*children) * m.PriceTransition
	}
	return p
}

// RateDemand is what a plan asks of S3's request rates, prefix group by
// prefix group. Every request a run makes goes to one of them.
type RateDemand struct {
	// Sources are the objects read by GETs, HEADs and copies, over
	// SourcePrefixes partitioned prefixes.
	Sources PrefixDemand `json:"sources"`
	// Archive is the archive's key, with its parts, create and complete.
	Archive PrefixDemand `json:"archive"`
	// Work is the run's work area, with the chains' round objects, the CRC
	// probes' uploads and the chains' pad. A run's work prefix is new, and
	// S3 serves a new keyspace as one partition until it splits it under
	// sustained load, so however its keys fan out it counts as one.
	Work PrefixDemand `json:"work"`
	// Seconds is the least time the rates allow; Binds names the group
	// whose rate sets it, or is "" when none binds.
	Seconds float64 `json:"seconds"`
	Binds   string  `json:"binds,omitempty"`
}

// PrefixDemand is what a plan asks of one group of prefixes, and what S3
// serves the group a second. Reads are GET, HEAD and the source side of a
// copy; writes are PUT, COPY, POST and DELETE.
type PrefixDemand struct {
	Reads     int     `json:"reads"`
	Writes    int     `json:"writes"`
	ReadRate  float64 `json:"readRate"`
	WriteRate float64 `json:"writeRate"`
	// Seconds is the least time the group's rates allow its requests,
	// less the RateBurstSeconds S3 serves at once.
	Seconds float64 `json:"seconds"`
}

// seconds is the least time d's rates allow its requests.
func (d PrefixDemand) seconds() float64 {
	var t float64
	if d.ReadRate > 0 {
		t = float64(d.Reads)/d.ReadRate - RateBurstSeconds
	}
	if d.WriteRate > 0 {
		t = max(t, float64(d.Writes)/d.WriteRate-RateBurstSeconds)
	}
	return max(t, 0)
}

// Groups are the demand's prefix groups with their names, in the order
// plan prints them.
func (d RateDemand) Groups() []NamedDemand {
	return []NamedDemand{{"sources", d.Sources}, {"archive", d.Archive}, {"work area", d.Work}}
}

// NamedDemand is a prefix group's demand with its name.
type NamedDemand struct {
	Name string
	PrefixDemand
}

// S3Rates returns what the plan's requests ask of S3's per-prefix rates.
// The sources' reads go over SourcePrefixes prefixes, the archive's writes
// to one key, the work area's reads and writes to one new keyspace.
func (m Model) S3Rates(s Stats) RateDemand {
	r := s.Requests
	// The archive takes a request a part, and its uploads' creates and
	// completes; every other create and complete is a chain round's.
	archiveUploads := max(r.Create-s.ChainRounds, 0)
	archive := s.Parts + 2*archiveUploads
	// A chain copies its round objects, each round what is built so far
	// and then its product into the archive; every other copy reads a source.
	roundCopies := s.ChainRounds + s.ChainParts
	sourceCopies := max(r.UploadPartCopy-roundCopies, 0)
	writes := r.UploadPart + r.UploadPartCopy + r.Create + r.Complete + r.Delete
	d := RateDemand{
		Sources: PrefixDemand{Reads: r.Get + r.Head + sourceCopies, ReadRate: m.S3ReadRate * float64(max(m.SourcePrefixes, 1))},
		Archive: PrefixDemand{Writes: archive, WriteRate: m.S3WriteRate},
		Work: PrefixDemand{Reads: roundCopies + s.JobReads, Writes: max(writes-archive, 0) + s.CRCDocs + 2*s.ProbeUploads,
			ReadRate: m.S3ReadRate, WriteRate: m.S3WriteRate},
	}
	d.Sources.Seconds, d.Archive.Seconds, d.Work.Seconds = d.Sources.seconds(), d.Archive.seconds(), d.Work.seconds()
	for _, g := range d.Groups() {
		if g.Seconds > d.Seconds {
			d.Seconds, d.Binds = g.Seconds, g.Name
		}
	}
	return d
}

// RateBurstSeconds is how many seconds' worth of requests S3 serves a
// prefix at once before its rate binds. The published fan-out built 3,000
// parts within about a second.
const RateBurstSeconds = 1.0

// serverSeconds returns the server's share of the work. It reads every
// streamed byte from a source and takes it in as a part, copies every copied
// byte, answers every request and assembles every chain round by a Complete.
func (m Model) serverSeconds(s Stats) float64 {
	var server float64
	rate := func(work, perSecond float64) float64 {
		if perSecond <= 0 {
			return 0
		}
		return work / perSecond
	}
	server += math.Max(rate(float64(s.StreamedBytes), m.ServerIngestRate), rate(float64(s.StreamedBytes), m.ServerGetRate))
	server += rate(float64(s.ServerCopiedBytes), m.ServerCopyRate)
	server += rate(float64(s.Requests.Total()), m.ServerRequestRate)
	server += float64(s.ServerCopiedBytes-s.CopiedBytes) * m.CompletePerByte
	return server
}

// ResultReadsInFlight is how many batches' CRC-32 objects the finalizer
// reads at once, in the workflow's readMapResults.
const ResultReadsInFlight = 32

// overheadSeconds returns what the run waits for besides the workers and
// the server. That is listing, HEADs up front, start, launch, the
// finalizer's reads of the batches' CRC-32s beyond the one batch
// FinishSeconds holds, the chains' pad and the final Complete.
func (m Model) overheadSeconds(s Stats, r Run, w, children, conc float64) float64 {
	overhead := m.listSeconds(s.Entries) +
		float64(r.HeadsUpFront)*m.RequestLatency/conc + m.FinishSeconds + float64(s.Parts)*m.CompletePerPart +
		float64(s.ArchiveBytes)*m.CompletePerByte
	if r.Orchestrated {
		overhead += m.StartSeconds + w/m.LaunchRate
		overhead += (math.Ceil(children/ResultReadsInFlight) - 1) * m.RequestLatency
	}
	if s.ChainParts > 0 {
		overhead += partwork.PadSize / m.WorkerBandwidth // the planner uploads the chains' pad
	}
	return overhead
}

// listSeconds returns the time s3prefix.Under.List takes to list n keys.
// The first page comes alone, the rest ListConcurrency at a time, or as
// fast as one vCPU decodes them.
func (m Model) listSeconds(n int) float64 {
	pages := ceilDiv(int64(n), 1000)
	if pages == 0 {
		return 0
	}
	trips := 1 + ceilDiv(pages-1, int64(max(m.ListConcurrency, 1)))
	return math.Max(float64(trips)*m.ListPageSeconds, float64(pages)*m.ListPageCPUSeconds)
}

// streamWaits are the round trips a worker streaming a part waits for
// before and after its bytes flow, one after another. They are the GET of
// the part's entries, its CRC probes all at once, the first byte of its
// first GET, and UploadPart's answer. Parts in flight together wait side
// by side, so a worker pays them once.
const streamWaits = 4

// batchSeconds is how long one worker invocation takes to build a load.
func (m Model) batchSeconds(l Load) float64 {
	st, rq := m.loadSeconds(l, math.Max(m.StreamPasses, 1))
	return m.InvokeSeconds + math.Max(st, rq)
}

// loadSeconds is how long one worker takes to stream a load's bytes and
// make its requests. It makes Concurrency round trips at a time, a chain's
// partwork.ChainSteps one after the other, and copies at CopyRate.
func (m Model) loadSeconds(l Load, passes float64) (stream, requests float64) {
	conc := float64(m.Concurrency)
	stream = m.streamSeconds(l.StreamedBytes, l.PipedBytes, l.UploadParts+l.ChainParts, passes)
	if l.UploadParts > 0 {
		stream += streamWaits * m.RequestLatency
	}
	// A load's HEADs are its workers', for the CRC-32s of streamed entries;
	// a chain's are a step of it. The planner's are the run's HeadsUpFront.
	reqs := float64(l.Requests.UploadPartCopy + l.Requests.Get + l.Requests.Head - l.ChainHeads)
	var chain float64
	if l.ChainRounds > 0 {
		// Each round also waits for the copy of what is built and for the
		// Complete that assembles it.
		perRound := float64(l.ServerCopiedBytes-l.CopiedBytes+l.StreamedBytes) / float64(l.ChainRounds)
		bytes := perRound * (1/m.CopyRate + m.CompletePerByte)
		chain = math.Max(float64(l.ChainSteps)*m.RequestLatency/conc+float64(l.ChainRounds)*bytes/conc,
			float64(l.LongestChainSteps)*m.RequestLatency+float64(l.LongestChain)*bytes)
	}
	requests = reqs/conc*m.RequestLatency + chain + float64(l.CopiedBytes)/m.CopyRate/conc
	return stream, requests
}

// streamSeconds is how long one worker takes to stream bytes in parts,
// UploadsInFlight parts at a time; piped of them go from GET to UploadPart
// in one pass. A worker that assembles a part before sending it, with
// passes 2, sends the first parts only after reading them. Later parts are
// read while earlier ones are sent, so only that first wave crosses the
// link twice in a row.
func (m Model) streamSeconds(bytes, piped int64, parts int, passes float64) float64 {
	if bytes <= 0 {
		return 0
	}
	piped = min(piped, bytes)
	uploads := m.Concurrency
	if m.UploadsInFlight > 0 {
		uploads = min(uploads, m.UploadsInFlight)
	}
	firstWave := math.Min(1, float64(uploads)/float64(max(parts, 1)))
	return (float64(piped) + float64(bytes-piped)*(1+(passes-1)*firstWave)) / m.WorkerBandwidth
}

// workerClock is when each worker is next free, a min-heap.
type workerClock []float64

func (h workerClock) Len() int           { return len(h) }
func (h workerClock) Less(i, j int) bool { return h[i] < h[j] }
func (h workerClock) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *workerClock) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *workerClock) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
