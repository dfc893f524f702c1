package plan

import (
	"io"
	"runtime"
	"testing"
)

// heapSampler is an entries file that is not kept: it notes the live heap
// every few megabytes written, the encoder's memory while it writes.
type heapSampler struct {
	written, next int64
	peak          uint64
}

func (h *heapSampler) Write(b []byte) (int, error) {
	if h.written += int64(len(b)); h.written >= h.next {
		h.peak = max(h.peak, heapAfterGC())
		h.next = h.written + 4<<20
	}
	return len(b), nil
}

// The planner writes the entries file as it makes it (EncodeTo): encoding
// holds a buffer and the line starts of parts' bounds, not the file, which
// at ten million entries is gigabytes.
func TestEncodeToHoldsNoEntriesFile(t *testing.T) {
	const n = 200_000
	p, err := Make(small(n, 3), Options{Strategy: StrategyStream, Workers: 100})
	if err != nil {
		t.Fatal(err)
	}
	base := heapAfterGC()
	w := &heapSampler{}
	if _, _, err := p.EncodeTo(w, io.Discard); err != nil {
		t.Fatal(err)
	}
	held := int64(w.peak) - int64(base)
	t.Logf("entries file %d MiB; encoding held %d KiB at most", w.written>>20, held>>10)
	if w.written < 16<<20 {
		t.Fatalf("entries file of %d entries is %d bytes: too small to tell a buffer from the file", n, w.written)
	}
	if held > w.written/8 {
		t.Errorf("encoding %d entries held %d bytes while writing an entries file of %d: it keeps the file, not a buffer", n, held, w.written)
	}
	runtime.KeepAlive(p)
}
