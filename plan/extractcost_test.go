package plan

import "testing"

// On the AWS profile the time crossing decides: copy pays four round trips
// (4 × 25 ms), read one and a share of another plus 2·s at 75 MB/s and the
// copy s at 200 MB/s, so (100 − 25) ms ≈ s·(2/75e6 − 1/200e6 + 25 ms/8 MiB),
// a few MB; dollars cross far later (two PUT-class requests, $1e-5, buy
// about 18 MB of Lambda link time at 1.769 GB). Between 64 KiB and 16 MiB.
func TestStoredReadBelowAWS(t *testing.T) {
	const group = 8 << 20
	m := DefaultModel
	below := m.StoredReadBelow(group)
	if below < 64<<10 || below > 16<<20 {
		t.Fatalf("AWS profile reads STORED entries below %d bytes: want between 64 KiB and 16 MiB", below)
	}
	// Below the threshold reading is no slower and no dearer; well above it,
	// it is slower or dearer.
	for _, s := range []int64{1, 4 << 10, below / 2, below - 1} {
		c := m.PriceStored(s, group)
		if c.Read.Seconds > c.Copy.Seconds || c.Read.Dollars > c.Copy.Dollars {
			t.Errorf("size %d < %d: read %+v, copy %+v: want read no slower and no dearer", s, below, c.Read, c.Copy)
		}
	}
	for _, s := range []int64{below + below/10 + 1, 4 * below, 1 << 30} {
		c := m.PriceStored(s, group)
		if c.Read.Seconds <= c.Copy.Seconds && c.Read.Dollars <= c.Copy.Dollars {
			t.Errorf("size %d > %d: read %+v, copy %+v: want read slower or dearer", s, below, c.Read, c.Copy)
		}
	}
}

// The threshold moves with what makes each way slow: a faster link makes
// reading cheaper (higher threshold), a longer round trip makes copying's
// extra requests dearer (higher), a faster server copy lowers it.
func TestStoredReadBelowMoves(t *testing.T) {
	const group = 8 << 20
	base := DefaultModel
	at := func(f func(*Model)) int64 { m := base; f(&m); return m.StoredReadBelow(group) }
	b := base.StoredReadBelow(group)
	for _, tc := range []struct {
		name   string
		change func(*Model)
		higher bool
	}{
		{"link ×2", func(m *Model) { m.WorkerBandwidth *= 2 }, true},
		{"link ÷2", func(m *Model) { m.WorkerBandwidth /= 2 }, false},
		{"latency ×2", func(m *Model) { m.RequestLatency *= 2 }, true},
		{"latency ÷2", func(m *Model) { m.RequestLatency /= 2 }, false},
		{"copy rate ×4", func(m *Model) { m.CopyRate *= 4 }, false},
		{"complete per byte (a concatenating server)", func(m *Model) { m.CompletePerByte = 2.3e-9 }, true},
	} {
		got := at(tc.change)
		if tc.higher && got <= b || !tc.higher && got >= b {
			t.Errorf("%s: threshold %d from %d, want it %s", tc.name, got, b, map[bool]string{true: "higher", false: "lower"}[tc.higher])
		}
	}
	// A zero round trip leaves copying's requests costing only dollars, and
	// reading no faster than copying at any size: copy everything.
	if got := at(func(m *Model) { m.RequestLatency = 0 }); got != 0 {
		t.Errorf("no request latency: threshold %d, want 0 (reading is never faster)", got)
	}
	// A link faster than the copy, twice over: reading is never slower, and
	// the threshold is dollars' (finite) or the cap.
	if got := at(func(m *Model) { m.WorkerBandwidth = 4 * m.CopyRate }); got <= b {
		t.Errorf("link 4× the copy rate: threshold %d, want above %d", got, b)
	}
}
