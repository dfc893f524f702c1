// Package s3metrics counts the S3 requests a client makes, by API, and the
// bytes it sends and receives in object bodies.
package s3metrics

import (
	"context"
	"sort"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// Counter counts requests by operation name (GetObject, UploadPartCopy, …).
// Retries made inside the SDK count once: this is what a user is billed for
// only approximately, and what the workflow asked for exactly.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int64
}

// New returns an empty counter.
func New() *Counter { return &Counter{counts: map[string]int64{}} }

// Option installs the counter on an S3 client.
func (c *Counter) Option() func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("s3zip-count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.counts[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	}
}

// Count is one operation's request count.
type Count struct {
	Op string `json:"op"`
	N  int64  `json:"n"`
}

// Snapshot returns the counts so far, by operation name.
func (c *Counter) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Sorted returns the counts, largest first.
func (c *Counter) Sorted() []Count {
	var out []Count
	for op, n := range c.Snapshot() {
		out = append(out, Count{op, n})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].N != out[b].N {
			return out[a].N > out[b].N
		}
		return out[a].Op < out[b].Op
	})
	return out
}

// Total is the number of requests.
func (c *Counter) Total() int64 {
	var t int64
	for _, n := range c.Snapshot() {
		t += n
	}
	return t
}
