package plan

import "math"

// Extract either copies a STORED entry server-side or reads it with its
// neighbours and puts it. Both ways are priced per entry as the time until
// its object exists and the dollars it costs. A copy is four round trips in
// a row, the local-header GET, create, copy and complete, plus the bytes at
// CopyRate and CompletePerByte. A read is one PutObject, a share of its
// group's ranged GET, and the bytes twice over the worker's link. Both pay
// the worker's time at Lambda's price. Every term is linear in the size, so
// each objective has one crossing size; docs/contract.md, section "Extract",
// works the numbers.

// StoredCost is the time and dollars of extracting one STORED entry of
// Size bytes by copy and by read.
type StoredCost struct {
	Size       int64
	Copy, Read Prediction
}

// MaxReadBelow bounds StoredReadBelow. An entry this large is copied
// whatever the model says, because the read is priced as one PutObject and
// extract.largeObject uploads an entry of 64 MiB or more in parts instead.
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
// grouped GETs of group bytes; 0 means 8 MiB.
func (m Model) PriceStored(size, group int64) StoredCost {
	l := m.storedLines(group)
	at := func(line [2]float64) float64 { return line[0] + line[1]*float64(size) }
	return StoredCost{
		Size: size,
		Copy: Prediction{Seconds: at(l.copySecs), Dollars: at(l.copyDollars)},
		Read: Prediction{Seconds: at(l.readSecs), Dollars: at(l.readDollars)},
	}
}

// StoredReadBelow returns the size below which extract reads a STORED entry
// and puts it rather than copying it server-side. Every size below it reads
// no slower and no dearer than it copies: it is the lower of the two
// crossing sizes, rounded down, at most MaxReadBelow. It is 0 when no size
// is, and every STORED entry is copied.
func (m Model) StoredReadBelow(group int64) int64 {
	l := m.storedLines(group)
	return min(crossing(l.readSecs, l.copySecs), crossing(l.readDollars, l.copyDollars))
}

// crossing returns the size up to which read, a + b·s, is at most copy,
// when read is cheaper for the smallest entries, and 0 when it is not.
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
