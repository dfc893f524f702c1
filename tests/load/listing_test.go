package load_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// listingKeys is how many keys TestListingRate lists (S3ZIP_LIST_KEYS).
func listingKeys(t *testing.T) int {
	n := 200_000
	if s := os.Getenv("S3ZIP_LIST_KEYS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("S3ZIP_LIST_KEYS=%q: want a whole number of keys", s)
		}
	}
	return n
}

// TestListingRate measures listing a prefix of 200,000 keys one request at
// a time (one paginator, as the planner listed before) and with
// s3prefix.DefaultListConcurrency requests in flight, against versitygw and
// against an in-memory ListObjectsV2 server that costs next to nothing per
// page, each straight and through a proxy that answers no request sooner
// than S3's 25 ms to first byte (and 100 ms: a page of 1,000 keys is a
// few hundred KB of XML). Shapes: a folder of folders, one flat folder of
// numbered keys (the hardest to cut), random hex names, and logs by
// year/month/day/hour. versitygw gets the first two, seeded as files in its
// directory (it lists them as objects, without stored ETags: PutObject
// here manages a few thousand a second).
//
// What bounds listing here is CPU: versitygw walks its directories and
// reads every object's attributes (a flat folder: the whole folder read
// again for every page), and the SDK decodes a page's XML in about 10 ms
// of this process's CPU (printed per request), on 2 cores other tests
// share. Requests in flight hide the round trip, not that: a listing is at
// most (round trip + decoding) / decoding times faster.
//
//	S3ZIP_LONG=1 go test -count=1 -run TestListingRate -v -timeout 30m ./tests/load/
func TestListingRate(t *testing.T) {
	long(t)
	n := listingKeys(t)
	shapes := []struct {
		prefix    string
		key       func(i int) string
		versitygw bool
	}{
		{"nest/", func(i int) string { return fmt.Sprintf("nest/%03d/%06d.log", i/1000, i) }, true},
		{"flat/", func(i int) string { return fmt.Sprintf("flat/%08d", i) }, true},
		{"hex/", func(i int) string { return fmt.Sprintf("hex/%016x", rand.New(rand.NewPCG(uint64(i), 1)).Uint64()) }, false},
		{"logs/", func(i int) string {
			at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 157 * time.Second)
			return at.Format("logs/2006/01/02/15/") + fmt.Sprintf("host-%02d-%d.gz", i%7, i)
		}, false},
	}
	srv := s3test.Start(t)
	srv.CreateBucket(t, "src")
	var all []string
	made := ""
	for _, sh := range shapes {
		began := time.Now()
		for i := range n {
			k := sh.key(i)
			all = append(all, k)
			if !sh.versitygw {
				continue
			}
			path := filepath.Join(srv.DataDir(), "src", k)
			if dir := filepath.Dir(path); dir != made {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				made = dir
			}
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(began); sh.versitygw {
			t.Logf("seeded %d keys under %s in %.1f s (%.0f keys/s)", n, sh.prefix, took.Seconds(), float64(n)/took.Seconds())
		}
	}
	slices.Sort(all)
	via := func(name, endpoint string) struct {
		name string
		c    s3prefix.ObjectLister
	} {
		c := srv.Client(t, func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint) })
		return struct {
			name string
			c    s3prefix.ObjectLister
		}{name, c}
	}
	delayed := func(target string, latency time.Duration) string {
		p, err := faultproxy.Start(faultproxy.Config{Target: target, Latency: latency})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p.URL()
	}
	mem := listServer(t, all)
	servers := []struct {
		name string
		c    s3prefix.ObjectLister
	}{via("versitygw", srv.Endpoint()), via("versitygw+25ms", delayed(srv.Endpoint(), 25*time.Millisecond)),
		via("memory", mem), via("memory+25ms", delayed(mem, 25*time.Millisecond)), via("memory+100ms", delayed(mem, 100*time.Millisecond))}
	for _, sh := range shapes {
		for _, via := range servers {
			if strings.HasPrefix(via.name, "versitygw") && !sh.versitygw {
				continue
			}
			var seq []string
			var seqSecs float64
			for _, conc := range []int{1, s3prefix.DefaultListConcurrency} {
				var keys []string
				c := &counted{ObjectLister: via.c}
				began, cpu := time.Now(), cpuTime()
				err := s3prefix.Under{Bucket: "src", Prefix: sh.prefix, Named: named}.List(context.Background(), c,
					s3prefix.ListOptions{Concurrency: conc},
					func(objs []types.Object) error {
						for _, o := range objs {
							keys = append(keys, aws.ToString(o.Key))
						}
						return nil
					})
				if err != nil {
					t.Fatal(err)
				}
				secs, cpuSecs := time.Since(began).Seconds(), (cpuTime() - cpu).Seconds()
				requests := int(c.requests.Load())
				if len(keys) != n || !slices.IsSorted(keys) {
					t.Fatalf("%s via %s, %d in flight: %d keys (sorted: %v), want %d", sh.prefix, via.name, conc, len(keys), slices.IsSorted(keys), n)
				}
				line := fmt.Sprintf("listing: %-5s %d keys via %-14s %2d in flight: %6.2f s, %7.0f keys/s, %4d requests (%d pages), this process's CPU %4.1f ms a request",
					sh.prefix, n, via.name, conc, secs, float64(n)/secs, requests, (n+999)/1000, 1000*cpuSecs/float64(requests))
				if conc == 1 {
					seq, seqSecs = keys, secs
				} else {
					if !slices.Equal(keys, seq) {
						t.Fatalf("%s via %s: %d in flight listed other keys than one at a time", sh.prefix, via.name, conc)
					}
					line += fmt.Sprintf(", %.1f× one at a time", seqSecs/secs)
				}
				fmt.Println(line)
			}
		}
	}
}

// counted is a client with its ListObjectsV2 requests counted.
type counted struct {
	s3prefix.ObjectLister
	requests atomic.Int64
}

func (c *counted) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	c.requests.Add(1)
	return c.ObjectLister.ListObjectsV2(ctx, in, opts...)
}

// cpuTime is the CPU time this process has used (the client's decoding,
// and the in-memory server's encoding where it answers).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func named(op, bucket, key string, err error) error {
	return fmt.Errorf("%s s3://%s/%s: %w", op, bucket, key, err)
}
