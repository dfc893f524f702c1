package zipread

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// headerWindow is how far apart local headers may be and still be read with
// one ranged GET, as a GET costs about as much as reading this many bytes
// more.
const headerWindow = 256 << 10

// localExtraGuess is how much extra field a local header is assumed to carry
// when its range is planned; a longer one costs one more ranged GET.
const localExtraGuess = 128

// DataStarts reads the local headers of the entries named by indices and
// returns, for each of them, where its data starts. The local header's own
// name and extra lengths decide it, and they may differ from the central
// directory's. Neighbouring headers are read with one ranged GET; at most
// concurrency GETs run at once. A missing signature or a header running
// into the central directory is a *FormatError.
func (a *Archive) DataStarts(ctx context.Context, indices []int, concurrency int) (map[int]int64, error) {
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	order := append([]int(nil), indices...)
	sort.Slice(order, func(x, y int) bool { return a.Entries[order[x]].Offset < a.Entries[order[y]].Offset })
	guessEnd := func(i int) int64 {
		e := &a.Entries[i]
		return min(e.Offset+zipformat.LocalHeaderLen+int64(len(e.Name))+localExtraGuess, a.CentralDirStart)
	}
	type group struct {
		entries    []int
		start, end int64
	}
	var groups []group
	for _, i := range order {
		e := &a.Entries[i]
		if n := len(groups); n > 0 && e.Offset-groups[n-1].start < headerWindow {
			groups[n-1].entries = append(groups[n-1].entries, i)
			groups[n-1].end = max(groups[n-1].end, guessEnd(i))
			continue
		}
		groups = append(groups, group{entries: []int{i}, start: e.Offset, end: guessEnd(i)})
	}
	starts := make([]int64, len(a.Entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for _, gr := range groups {
		g.Go(func() error {
			if gr.start < 0 || gr.start+zipformat.LocalHeaderLen > a.CentralDirStart {
				e := &a.Entries[gr.entries[0]]
				return a.formatErr(e.Offset, "entry %q: local header offset %d is outside the entries (the central directory starts at %d)", e.Name, e.Offset, a.CentralDirStart)
			}
			buf, err := a.readRange(gctx, gr.start, gr.end)
			if err != nil {
				return err
			}
			for _, i := range gr.entries {
				e := &a.Entries[i]
				at := e.Offset - gr.start
				if e.Offset+zipformat.LocalHeaderLen > a.CentralDirStart {
					return a.formatErr(e.Offset, "entry %q: local header at %d runs into the central directory at %d", e.Name, e.Offset, a.CentralDirStart)
				}
				var fixed []byte
				if at+zipformat.LocalHeaderLen <= int64(len(buf)) {
					fixed = buf[at : at+zipformat.LocalHeaderLen]
				} else if fixed, err = a.readRange(gctx, e.Offset, e.Offset+zipformat.LocalHeaderLen); err != nil {
					return err
				}
				var h localHeader
				if _, _, ok := parseLocalFixed(fixed, &h); !ok {
					return a.formatErr(e.Offset, "entry %q: no local header at offset %d (signature 0x%08x missing)", e.Name, e.Offset, zipformat.LocalHeaderSignature)
				}
				start := e.Offset + h.length
				if start > a.CentralDirStart {
					return a.formatErr(e.Offset, "entry %q: local header at %d is %d bytes long and runs into the central directory at %d", e.Name, e.Offset, h.length, a.CentralDirStart)
				}
				starts[i] = start
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[int]int64, len(indices))
	for _, i := range indices {
		out[i] = starts[i]
	}
	return out, nil
}

// String names the archive for messages.
func (a *Archive) String() string { return fmt.Sprintf("s3://%s/%s", a.Bucket, a.Key) }
