package workflow

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// forEach runs fn for 0..n-1 with at most limit at once; the first error
// cancels the rest and is returned.
func forEach(ctx context.Context, limit, n int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(limit, 1))
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}
