package extract

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// A batch holds at most putsInFlight small-object PUTs in flight across its
// jobs, and at most putBytesInFlight of their decoded bytes.
const (
	putsInFlight     = 32
	putBytesInFlight = 64 << 20
)

// putSlots bounds the PUTs a batch has in flight, by count and by the bytes
// they hold.
type putSlots struct {
	count, bytes *semaphore.Weighted
}

func newPutSlots() putSlots {
	return putSlots{count: semaphore.NewWeighted(putsInFlight), bytes: semaphore.NewWeighted(putBytesInFlight)}
}

// acquire waits for room for one PUT of size bytes, all of the byte bound
// for an entry larger than it, and returns what gives the room back.
func (p putSlots) acquire(ctx context.Context, size int64) (release func(), err error) {
	w := min(max(size, 1), putBytesInFlight)
	if err := p.count.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	if err := p.bytes.Acquire(ctx, w); err != nil {
		p.count.Release(1)
		return nil, err
	}
	return func() { p.bytes.Release(w); p.count.Release(1) }, nil
}
