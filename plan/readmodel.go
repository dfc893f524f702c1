package plan

import "math"

// DeflateRate is the bytes per second one vCPU compresses at DEFLATE level 6
// with klauspost/compress. The internal/deflate benchmark measures 159 MB/s
// on this repository's text on one core of a shared Xeon; a 1,769 MB Lambda,
// one arm64 vCPU, is taken at 120 MB/s to be safe.
const DeflateRate = 120e6

// ReadPass describes a read pass to price. Jobs is the number of pieces
// Bytes is cut into, Ratio the expected compressed to uncompressed ratio, and
// PerBatch the read jobs per child execution of the read map, as the planner
// sets readsPerBatch; 0 counts as 1.
type ReadPass struct {
	Bytes    int64
	Jobs     int
	Ratio    float64
	PerBatch int
}

// PredictRead prices a read pass run by workers at once. Each job streams
// its piece in at the worker's bandwidth while deflating it at DeflateRate,
// then writes the compressed piece out. It counts one GET and one PUT per
// job, and the map's transitions and invocations for batches of PerBatch jobs.
func (m Model) PredictRead(rp ReadPass, workers int) Prediction {
	if rp.Jobs == 0 {
		return Prediction{}
	}
	w := float64(max(min(workers, rp.Jobs), 1))
	rounds := math.Ceil(float64(rp.Jobs) / w)
	piece := float64(rp.Bytes) / float64(rp.Jobs)
	perJob := math.Max(piece/m.WorkerBandwidth, piece/DeflateRate) + piece*rp.Ratio/m.WorkerBandwidth + 2*m.RequestLatency
	worker := rounds * perJob
	overhead := m.StartSeconds + w/m.LaunchRate + 1 // the read pass's planning in the workflow's planReads, and the second planning step
	p := Prediction{WorkerSecs: worker, StreamSecs: worker, OverheadSecs: overhead, Seconds: worker + overhead}
	lambdaSecs := float64(rp.Jobs)*perJob + overhead
	per := max(rp.PerBatch, 1)
	batches := float64((rp.Jobs + per - 1) / per)
	p.Dollars = float64(rp.Jobs)/1000*(m.PricePutPer1000+m.PriceGetPer1000) +
		lambdaSecs*m.WorkerMemoryGB*m.PriceLambdaGBSecond + batches*m.PriceLambdaRequest + (3*batches+4)*m.PriceTransition
	return p
}
