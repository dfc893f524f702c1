package create

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// listCounter is the planner's client with its ListObjectsV2 requests
// counted, at once and in all, each held for a round trip's delay so that
// requests sent together overlap as they do against S3.
type listCounter struct {
	*s3.Client
	delay          time.Duration
	now, most, all atomic.Int64
}

func (c *listCounter) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	n := c.now.Add(1)
	defer c.now.Add(-1)
	c.all.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(c.delay)
	return c.Client.ListObjectsV2(ctx, in, opts...)
}

// TestPlannerListsInParallel: the planner (what `s3zip plan` and `create`
// and the planner Lambda run) lists a source prefix of several pages with
// many ListObjectsV2 requests in flight, and its entries are exactly those
// of one request at a time, for folders in folders, a flat folder of
// numbered keys, unicode and '/'-runs (versitygw stores a//b as a/b, as
// POSIX paths are: what it lists is compared; s3prefix's fake server keeps
// them), the whole bucket and a prefix with no keys.
func TestPlannerListsInParallel(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "src")
	objects := map[string][]byte{}
	for i := range 1500 {
		objects[fmt.Sprintf("nest/%02d/%02d/%d.log", i/150, i/10%15, i%10)] = []byte{byte(i)}
		objects[fmt.Sprintf("flat/%07d", i)] = []byte{byte(i), 1}
	}
	for i, k := range []string{"é", "日本/x", "🙂", "a//b", "a///c", "a/b", "a.b", "a-b", "a~"} {
		for j := range 120 {
			objects[fmt.Sprintf("uni/%s%d", k, j)] = []byte{byte(i), byte(j), 2}
		}
	}
	srv.PutObjects(t, "src", objects)
	client := srv.Client(t)
	entries := func(t *testing.T, prefix string, concurrency int) ([]plan.Entry, *listCounter, error) {
		c := &listCounter{Client: client, delay: 5 * time.Millisecond}
		pl := &Planner{S3: c, Config: Config{WorkBucket: "work", ListConcurrency: concurrency}}
		got, _, err := pl.Entries(t.Context(), request("auto", prefix, "out.zip", ""))
		return got, c, err
	}
	for _, tc := range []struct {
		prefix   string
		parallel bool // pages enough that one request at a time would be slow
	}{
		{"nest/", true}, {"flat/", true}, {"uni/", false}, {"", true}, {"none/", false},
	} {
		t.Run("prefix="+tc.prefix, func(t *testing.T) {
			want, one, wantErr := entries(t, tc.prefix, 1)
			got, many, err := entries(t, tc.prefix, 0) // the default
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("listing in parallel: error %v; one request at a time: %v", err, wantErr)
			}
			if len(got) != len(want) {
				t.Fatalf("%d entries listed in parallel, %d one request at a time", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("entry %d listed in parallel is %+v; one request at a time: %+v", i, got[i], want[i])
				}
			}
			t.Logf("%d entries: %d requests one at a time; %d requests, at most %d in flight by default", len(want), one.all.Load(), many.all.Load(), many.most.Load())
			if one.most.Load() != 1 {
				t.Errorf("LIST_CONCURRENCY 1 had %d requests in flight at once", one.most.Load())
			}
			if tc.parallel && many.most.Load() < 3 {
				t.Errorf("the planner listed %d entries (%d pages) with at most %d ListObjectsV2 in flight: listing is one paginator, not parallel",
					len(want), one.all.Load(), many.most.Load())
			}
		})
	}
}

// TestListConcurrencyFromEnv: a deployment sets the planner's listing
// concurrency with LIST_CONCURRENCY; unset, it is s3prefix's default.
func TestListConcurrencyFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
	}{{"", s3prefix.DefaultListConcurrency}, {"4", 4}, {"1", 1}} {
		env := map[string]string{"WORK_BUCKET": "work", "LIST_CONCURRENCY": tc.value}
		cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
		if err != nil || cfg.ListConcurrency != tc.want {
			t.Errorf("LIST_CONCURRENCY=%q: %d (%v), want %d", tc.value, cfg.ListConcurrency, err, tc.want)
		}
	}
	env := map[string]string{"WORK_BUCKET": "work", "LIST_CONCURRENCY": "many"}
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "LIST_CONCURRENCY") {
		t.Errorf("LIST_CONCURRENCY=many: %v, want an error naming LIST_CONCURRENCY", err)
	}
}
