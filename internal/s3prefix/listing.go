package s3prefix

// Listing a prefix with many requests in flight. One paginator lists
// 1,000 keys a round trip: 10,000 round trips one after another for 10 M
// keys. Here the key space under the prefix is cut into ranges, each
// listed by its own requests (StartAfter its first key, continuation
// tokens after that, stopping at its last), and a range that turns out
// large is cut again whenever a request slot is free: listing is bounded
// by how many requests are in flight, not by one chain of them. Pages come
// out in key order, exactly the objects one paginator gives.

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// DefaultListConcurrency is how many ListObjectsV2 requests one listing
// keeps in flight. The SDK decodes a page of 1,000 keys in about 10 ms of
// CPU (measured here: tests/load TestListingRate), and S3 answers one in
// 25–100 ms or more, so 16 in flight keep a planner's vCPU decoding
// instead of waiting for pages up to ~160 ms away; more would hold more
// pages in memory, not list faster on one vCPU.
const DefaultListConcurrency = 16

// ListOptions say how a listing runs.
type ListOptions struct {
	// Concurrency is the most ListObjectsV2 requests in flight; 1 (or
	// less) is one paginator.
	Concurrency int
	// PageKeys is each request's MaxKeys; 0 is S3's default and most,
	// 1,000.
	PageKeys int32
}

// minCutPages is the fewest pages a range must seem to hold beyond the one
// in flight, per piece, to be cut: a smaller one is done in a round trip
// or two, and each cut costs a request that may find nothing.
const minCutPages = 2

// span is one range of the key space being listed: keys after after, up
// to upTo when bounded.
type span struct {
	after   string
	upTo    string
	bounded bool
	token   string // the next page's continuation token
	first   string // the first key of the last page S3 gave this span
	cursor  string // the last
	abc     *alphabet
	ahead   float64 // pages it seems to hold beyond the one in flight; 0 until a page shows
	busy    bool    // a request is in flight
	done    bool
}

// answer is a request's outcome: a page of a span, or (s nil) the
// folders under level.
type answer struct {
	s     *span
	level string
	depth int
	out   *s3.ListObjectsV2Output
	err   error
}

// How far a listing looks for folders before it cuts: down to
// maxFolderDepth levels below the prefix, until it knows folderGoal
// folders per request slot, with at most seekGoal requests per slot.
// Folders are where keys named by date, host or tenant (logs/2025/01/…)
// really split, which no numbering of the first page's keys can tell.
const (
	maxFolderDepth = 4
	folderGoal     = 4
	seekGoal       = 2
)

// List calls fn with the objects under the prefix in key order, page by
// page, one call after another: the same objects, in the same order, as
// one paginator gives (its pages may be cut elsewhere). Up to
// opt.Concurrency requests are in flight; pages listed ahead of their turn
// wait in memory (ListPages keeps less of them). The first failure ends
// the listing.
//
// With more than one request in flight, the first pages are asked for
// together with the folders under the prefix (Delimiter "/", level by
// level while they are few): where there are folders, ranges start at
// them; within a folder, and where there are none, the numbering of the
// keys seen places the cuts (keyspace.go).
func (u Under) List(ctx context.Context, c ObjectLister, opt ListOptions, fn func([]types.Object) error) error {
	return ListPages(ctx, u, c, opt, Pages[[]types.Object]{Keep: func(objs []types.Object) []types.Object { return objs }, Each: fn})
}

// Pages is what a caller of ListPages does with the pages: Keep turns each
// page, as it arrives, into what the caller holds of it; Each is given
// them in key order, one call after another.
type Pages[T any] struct {
	Keep func([]types.Object) T
	Each func(T) error
}

// ListPages is List with each page first turned by Keep into what the
// caller holds of it (as it arrives, one page at a time): a page listed
// ahead of its turn waits as that, not as S3's objects, whose pointers
// cost several times the bytes of a key, a size and an ETag. Listing is
// ahead of its turn for most pages (every range but the first lists at
// once), so this is what a big listing holds.
func ListPages[T any](ctx context.Context, u Under, c ObjectLister, opt ListOptions, pages Pages[T]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := max(opt.Concurrency, 1)
	l := &listing[T]{
		Under: u, c: c, opt: opt, pages: pages, slots: slots,
		// Room for every request in flight: after a failure the others
		// finish into it and nothing waits for them.
		answers: make(chan answer, slots),
		spans:   []*span{{abc: &alphabet{}}},
		ready:   map[*span][]T{},
	}
	l.pageKeys = int(opt.PageKeys)
	if l.pageKeys <= 0 {
		l.pageKeys = 1000
	}
	if slots > 1 {
		l.toSeek = append(l.toSeek, level{u.Prefix, 1})
	}
	for {
		l.fill(ctx)
		if l.inFlight == 0 {
			return nil
		}
		a := <-l.answers
		l.inFlight--
		if a.err != nil {
			return u.Named("ListObjectsV2", u.Bucket, u.Prefix, a.err)
		}
		if a.s == nil {
			l.found(a)
			continue
		}
		if err := l.listed(a); err != nil {
			return err
		}
	}
}

// level is a folder to look into for the folders under it.
type level struct {
	prefix string
	depth  int
}

// listing is one ListPages: its spans, the requests in flight, and the
// pages listed ahead of their turn.
type listing[T any] struct {
	Under
	c       ObjectLister
	opt     ListOptions
	pages   Pages[T]
	slots   int
	answers chan answer
	spans   []*span
	ready   map[*span][]T // listed, not yet given to Each: a span before is still listing
	folders []string      // sorted
	toSeek  []level       // folders to look into, when a slot is free
	// Every span ends with a request that may find little: two spans are
	// made for every page's worth of keys listed, no faster, so a listing
	// of a few pages makes few more requests than one paginator (and one
	// of many pages has its slots full after a few round trips).
	pageKeys                   int
	inFlight, listedKeys, made int
	seeking, sought            int
}

// fill asks for what free request slots allow: the next page of each span
// not in flight, folders to cut at, new spans.
func (l *listing[T]) fill(ctx context.Context) {
	for _, s := range l.spans {
		if l.inFlight < l.slots && !s.busy && !s.done {
			l.page(ctx, s)
		}
	}
	// Folders are looked for as pages come (each level costs a request
	// per folder): a listing of a few pages makes few requests to cut it.
	for len(l.toSeek) > 0 && l.inFlight < l.slots && l.sought <= 2*l.listedKeys/l.pageKeys {
		l.seek(ctx, l.toSeek[0])
		l.toSeek = l.toSeek[1:]
	}
	if l.seeking == 0 { // cut where the folders are, once those asked for are known
		for _, s := range l.cut(&l.spans, l.folders, min(l.slots-l.inFlight, 2*l.listedKeys/l.pageKeys-l.made)) {
			l.page(ctx, s)
			l.made++
		}
	}
}

func (l *listing[T]) ask(ctx context.Context, a answer, in *s3.ListObjectsV2Input) {
	if l.opt.PageKeys > 0 {
		in.MaxKeys = aws.Int32(l.opt.PageKeys)
	}
	l.inFlight++
	go func() {
		a.out, a.err = l.c.ListObjectsV2(ctx, in)
		l.answers <- a
	}()
}

// page asks for a span's next page.
func (l *listing[T]) page(ctx context.Context, s *span) {
	in := &s3.ListObjectsV2Input{Bucket: &l.Bucket, Prefix: &l.Prefix}
	switch {
	case s.token != "":
		in.ContinuationToken = aws.String(s.token)
	case s.cursor != "":
		in.StartAfter = aws.String(s.cursor)
	case s.after != "":
		in.StartAfter = aws.String(s.after)
	}
	s.busy = true
	l.ask(ctx, answer{s: s}, in)
}

// seek asks for the folders one level under lv.
func (l *listing[T]) seek(ctx context.Context, lv level) {
	l.seeking++
	l.sought++
	l.ask(ctx, answer{level: lv.prefix, depth: lv.depth}, &s3.ListObjectsV2Input{Bucket: &l.Bucket, Prefix: aws.String(lv.prefix), Delimiter: aws.String("/")})
}

// found takes the folders a seek found, and the levels under them to look
// into while they are few.
func (l *listing[T]) found(a answer) {
	l.seeking--
	for _, cp := range a.out.CommonPrefixes {
		f := aws.ToString(cp.Prefix)
		l.folders = append(l.folders, f)
		if a.depth < maxFolderDepth && len(l.folders) < folderGoal*l.slots && l.sought+len(l.toSeek) < seekGoal*l.slots {
			l.toSeek = append(l.toSeek, level{f, a.depth + 1})
		}
	}
	slices.Sort(l.folders)
}

// listed takes a span's page and gives Each every page whose turn has
// come.
func (l *listing[T]) listed(a answer) error {
	a.s.busy = false
	kept, err := l.take(a.s, a.out)
	if err != nil {
		return err
	}
	l.listedKeys += len(kept)
	if len(kept) > 0 {
		l.ready[a.s] = append(l.ready[a.s], l.pages.Keep(kept))
	}
	for len(l.spans) > 0 {
		s := l.spans[0]
		for _, page := range l.ready[s] {
			if err := l.pages.Each(page); err != nil {
				return err
			}
		}
		delete(l.ready, s)
		if !s.done {
			return nil
		}
		l.spans = l.spans[1:]
	}
	return nil
}

// take returns the objects of a page that are the span's and moves the
// span on.
func (u Under) take(s *span, out *s3.ListObjectsV2Output) ([]types.Object, error) {
	objs := out.Contents
	if n := len(objs); n > 0 {
		last := aws.ToString(objs[n-1].Key)
		if s.cursor != "" && last <= s.cursor {
			return nil, fmt.Errorf("ListObjectsV2 %s: the page after %q ends at %q, not after it: the server does not list in key order", u, s.cursor, last)
		}
		s.first = aws.ToString(objs[0].Key)
		s.cursor = last
	}
	kept := objs[:0]
	for _, o := range objs {
		k := aws.ToString(o.Key)
		if s.bounded && k > s.upTo {
			s.done = true
			break
		}
		if k > s.after { // a server that ignores StartAfter repeats earlier keys
			kept = append(kept, o)
			s.abc.add(trimPrefix(k, u.Prefix))
		}
	}
	s.token = aws.ToString(out.NextContinuationToken)
	switch {
	case !aws.ToBool(out.IsTruncated), s.bounded && s.cursor >= s.upTo:
		s.done = true
	case s.token == "" && len(objs) == 0:
		return nil, fmt.Errorf("ListObjectsV2 %s after %q: a truncated page with neither keys nor a continuation token", u, max(s.cursor, s.after))
	}
	s.ahead = 0
	if !s.done {
		if p, ok := s.sample(u.Prefix).plan(s.abc); ok {
			s.ahead = p.ahead
		}
	}
	return kept, nil
}

// pagesAhead is how many pages the span seems to hold past the one in
// flight. Where its last page went past folders, folders are smaller than
// pages, and those still ahead say how much is left better than the
// numbering, which sees the gap between one folder's keys and the next
// folder's name as room for keys.
func (s *span) pagesAhead(folders []string) float64 {
	passed := countBetween(folders, s.first, s.cursor, true)
	if s.ahead == 0 || passed == 0 {
		return s.ahead
	}
	return float64(countBetween(folders, s.cursor, s.upTo, s.bounded)) / float64(passed)
}

// countBetween is how many of the sorted keys are after lo and before hi
// (or at all after lo when unbounded).
func countBetween(keys []string, lo, hi string, bounded bool) int {
	from, _ := slices.BinarySearch(keys, lo+"\x00")
	to := len(keys)
	if bounded {
		to, _ = slices.BinarySearch(keys, hi)
	}
	return max(0, to-from)
}

func (s *span) sample(prefix string) spanSample {
	return spanSample{prefix: prefix, first: s.first, cursor: s.cursor, upTo: s.upTo, bounded: s.bounded}
}

// cut gives idle request slots work: the spans that seem to hold the most
// are cut, each new range a span of its own, placed in key order. It
// returns the new spans.
func (u Under) cut(spans *[]*span, folders []string, idle int) []*span {
	var made []*span
	for idle > 0 {
		var big *span
		most := 0.0
		for _, s := range *spans {
			if ahead := s.pagesAhead(folders); !s.done && ahead >= minCutPages && ahead > most {
				big, most = s, ahead
			}
		}
		if big == nil {
			return made
		}
		sample := big.sample(u.Prefix)
		big.ahead = 0 // until its next page shows more
		p, ok := sample.plan(big.abc)
		if !ok {
			continue
		}
		n := idle
		if most < float64(n*minCutPages) {
			n = int(most / minCutPages)
		}
		keys := p.cuts(sample, folders, n) // big now ends at the first; a span starts at each
		if len(keys) == 0 {
			continue
		}
		at := slices.Index(*spans, big)
		var pieces []*span
		for i, k := range keys {
			s := &span{after: k, upTo: big.upTo, bounded: big.bounded, abc: big.abc.clone()}
			if i+1 < len(keys) {
				s.upTo, s.bounded = keys[i+1], true
			}
			pieces = append(pieces, s)
		}
		big.upTo, big.bounded = keys[0], true
		*spans = slices.Insert(*spans, at+1, pieces...)
		made = append(made, pieces...)
		idle -= len(pieces)
	}
	return made
}
