package plan

import "testing"

func TestPredictRead(t *testing.T) {
	const gb = 1e9
	small := DefaultModel.PredictRead(ReadPass{Bytes: 15 * gb, Jobs: 224, Ratio: 0.2}, 100)
	fewer := DefaultModel.PredictRead(ReadPass{Bytes: 15 * gb, Jobs: 224, Ratio: 0.2}, 10)
	if !(small.Seconds < fewer.Seconds) {
		t.Errorf("100 workers %.1f s, 10 workers %.1f s: more workers should be faster", small.Seconds, fewer.Seconds)
	}
	// 15 GB through one worker at the slower of its link and DEFLATE is the bound the fan-out beats.
	if one := 15 * gb / min(DefaultModel.WorkerBandwidth, DeflateRate); small.Seconds > one/10 {
		t.Errorf("100 workers take %.1f s, over a tenth of one worker's %.0f s", small.Seconds, one)
	}
	if small.Dollars <= 0 || small.Dollars > 0.1 {
		t.Errorf("read pass of 15 GB costs $%.4f", small.Dollars)
	}
	if z := DefaultModel.PredictRead(ReadPass{}, 100); z.Seconds != 0 || z.Dollars != 0 {
		t.Errorf("no read pass predicted %+v", z)
	}
	t.Logf("15 GB, 224 jobs: 100 workers %.1f s $%.4f; 10 workers %.1f s $%.4f", small.Seconds, small.Dollars, fewer.Seconds, fewer.Dollars)
}
