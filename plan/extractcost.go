package plan

import "math"

// Extract's choice for a STORED entry: copy it server-side, or read it with
// its neighbours and put it. Both ways are priced per entry, as one entry's
// time from start to its object existing and its dollars:
//
//   - copy: a ranged GET of its local header (the planner learns where the
//     data starts) and CreateMultipartUpload, UploadPartCopy,
//     CompleteMultipartUpload, one after another: four round trips, the
//     bytes copied at CopyRate and assembled at CompletePerByte; one GET and
//     three PUT-class requests. (The planner reads headers within 256 KiB
//     of each other with one GET; entries near the threshold, megabytes
//     apart, each need their own.)
//   - read: its share (by bytes) of one ranged GET of group bytes, its s
//     bytes in and then out over the worker's link, and one PutObject: one
//     round trip plus the share of another; a share of a GET and one PUT.
//
// Both pay the worker's time at Lambda's price. Every term is linear in the
// size, so each objective has one crossing size: a read's fixed cost is
// lower (fewer requests), its cost per byte higher (the link, twice).

// StoredCost is the time and dollars of extracting one STORED entry of
// Size bytes by copy and by read.
type StoredCost struct {
	Size       int64
	Copy, Read Prediction
}

// MaxReadBelow bounds StoredReadBelow: an entry this large is copied
// whatever the model says. The read's price is one PutObject, and extract
// uploads an entry of 64 MiB or more in parts instead (extract.largeObject).
const MaxReadBelow = 64 << 20

// storedLines are copy's and read's seconds and dollars as a + b·size.
type storedLines struct {
	copySecs, copyDollars, readSecs, readDollars [2]float64
}

func (m Model) storedLines(group int64) storedLines {
	if group <= 0 {
		group = 8 << 20
	}
	lat := m.RequestLatency
	lambda := m.WorkerMemoryGB * m.PriceLambdaGBSecond // $ per worker second
	var l storedLines
	l.copySecs = [2]float64{4 * lat, 1/m.CopyRate + m.CompletePerByte}
	l.readSecs = [2]float64{lat, lat/float64(group) + 2/m.WorkerBandwidth}
	l.copyDollars = [2]float64{
		(3*m.PricePutPer1000+m.PriceGetPer1000)/1000 + l.copySecs[0]*lambda,
		l.copySecs[1] * lambda,
	}
	l.readDollars = [2]float64{
		m.PricePutPer1000/1000 + l.readSecs[0]*lambda,
		m.PriceGetPer1000/1000/float64(group) + l.readSecs[1]*lambda,
	}
	return l
}

// PriceStored prices one STORED entry of size bytes both ways, read in
// grouped GETs of group bytes (0: 8 MiB).
func (m Model) PriceStored(size, group int64) StoredCost {
	l := m.storedLines(group)
	at := func(line [2]float64) float64 { return line[0] + line[1]*float64(size) }
	return StoredCost{
		Size: size,
		Copy: Prediction{Seconds: at(l.copySecs), Dollars: at(l.copyDollars)},
		Read: Prediction{Seconds: at(l.readSecs), Dollars: at(l.readDollars)},
	}
}

// StoredReadBelow is the size below which extract reads a STORED entry and
// puts it rather than copying it server-side: every size below it is
// read both no slower and no more expensive than copied (it is the lower
// of the two crossing sizes, rounded down), at most MaxReadBelow; 0 when
// no size is (copy every STORED entry).
func (m Model) StoredReadBelow(group int64) int64 {
	l := m.storedLines(group)
	return min(crossing(l.readSecs, l.copySecs), crossing(l.readDollars, l.copyDollars))
}

// crossing is the size up to which read (a + b·s) is at most copy's, when
// read is cheaper for the smallest entries; 0 when it is not.
func crossing(read, copy [2]float64) int64 {
	if read[0] > copy[0] {
		return 0
	}
	if read[1] <= copy[1] {
		return MaxReadBelow
	}
	s := (copy[0] - read[0]) / (read[1] - copy[1])
	return int64(math.Min(math.Floor(s), MaxReadBelow))
}
