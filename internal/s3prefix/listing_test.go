package s3prefix_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// inFlight passes ListObjectsV2 to a real server after a delay (a round
// trip that is not ~0, so requests sent together overlap) and records how
// many were in flight at once and in all.
type inFlight struct {
	s3prefix.ObjectLister
	delay          time.Duration
	now, most, all atomic.Int64
}

func (f *inFlight) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	n := f.now.Add(1)
	defer f.now.Add(-1)
	f.all.Add(1)
	for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
	}
	time.Sleep(f.delay)
	return f.ObjectLister.ListObjectsV2(ctx, in, opts...)
}

// listingShapes are key sets of the shapes buckets have: folders in
// folders, one flat folder of numbered keys (the hardest to cut: long runs
// of equal digits), random names, and names with unicode, '/'-runs and the
// runes that sort next to '/'.
func listingShapes() map[string][]byte {
	keys := map[string][]byte{}
	for d := range 6 {
		for h := range 6 {
			for i := range 12 {
				keys[fmt.Sprintf("nest/2025-%02d/%02d/host-%d.log", d+1, h, i)] = nil
			}
		}
	}
	for i := range 700 {
		keys[fmt.Sprintf("flat/%08d.bin", i)] = nil
	}
	rng := rand.New(rand.NewPCG(23, 3))
	for range 400 {
		keys[fmt.Sprintf("hex/%012x", rng.Uint64()>>16)] = nil
	}
	runes := []string{"a", "é", "日本", "🙂", "-", ".", "/", "//", "///", "~", "0", "Z", " ", "+", "ü"}
	for range 500 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString(runes[rng.IntN(len(runes))])
		}
		keys["uni/"+b.String()+fmt.Sprint(rng.IntN(100))] = nil
	}
	for k := range keys {
		keys[k] = []byte(k)
	}
	return keys
}

// TestListMatchesOnePaginator: on the real server, List with many
// requests in flight gives exactly the objects one paginator gives, in the
// same order, for every shape of key set; requests overlap, stay within
// the concurrency asked for, and grow with pages, not keys.
func TestListMatchesOnePaginator(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	srv.PutObjects(t, "bkt", listingShapes())
	c := srv.Client(t)
	const pageKeys, concurrency = 20, 8
	for _, prefix := range []string{"nest/", "flat/", "hex/", "uni/", "", "none/", "flat/0000000"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			var want []types.Object
			p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: &prefix, MaxKeys: aws.Int32(pageKeys)})
			for p.HasMorePages() {
				page, err := p.NextPage(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, page.Contents...)
			}
			f := &inFlight{ObjectLister: c, delay: 5 * time.Millisecond}
			var got []types.Object
			var mu sync.Mutex
			u := s3prefix.Under{Bucket: "bkt", Prefix: prefix, Named: named}
			err := u.List(t.Context(), f, s3prefix.ListOptions{Concurrency: concurrency, PageKeys: pageKeys}, func(objs []types.Object) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, objs...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := diffObjects(got, want); d != "" {
				t.Fatalf("List with %d in flight differs from one paginator (%d objects): %s", concurrency, len(want), d)
			}
			pages := (len(want) + pageKeys - 1) / pageKeys
			t.Logf("%d keys, %d pages of %d: %d requests, at most %d in flight", len(want), pages, pageKeys, f.all.Load(), f.most.Load())
			if f.most.Load() > concurrency {
				t.Errorf("%d requests in flight at once; asked for at most %d", f.most.Load(), concurrency)
			}
			if pages >= 4*concurrency && f.most.Load() < concurrency/2 {
				t.Errorf("%d pages listed with at most %d requests in flight: the listing is not parallel (asked for %d)", pages, f.most.Load(), concurrency)
			}
			// Requests grow with pages: a range is cut off for every
			// page's worth of keys listed, and each costs at most one
			// request that finds it empty or short.
			if limit := 2*pages + 3*concurrency; int(f.all.Load()) > limit {
				t.Errorf("%d requests for %d pages; at most %d expected", f.all.Load(), pages, limit)
			}
		})
	}
}

// diffObjects says where two listings first differ, "" when they do not.
func diffObjects(got, want []types.Object) string {
	key := func(o types.Object) string {
		return fmt.Sprintf("%s size=%d etag=%s", aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag))
	}
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("got %d objects, want %d: missing from %q", len(got), len(want), key(want[i]))
		case i >= len(want):
			return fmt.Sprintf("got %d objects, want %d: extra from %q", len(got), len(want), key(got[i]))
		case key(got[i]) != key(want[i]):
			return fmt.Sprintf("object %d is %q, want %q", i, key(got[i]), key(want[i]))
		}
	}
	if !slices.IsSortedFunc(got, func(a, b types.Object) int { return strings.Compare(*a.Key, *b.Key) }) {
		return "keys out of order"
	}
	return ""
}
