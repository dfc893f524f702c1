package create

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func (f *fakeS3) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := f.call("DeleteObject"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, *in.Bucket+"/"+*in.Key)
	return &s3.DeleteObjectOutput{}, nil
}

// remover records DeleteObject calls; fail makes some of them fail, and
// hold, when not nil, blocks every delete until it is closed.
type remover struct {
	mu      sync.Mutex
	deleted []string
	fail    func(key string) error
	hold    chan struct{}
}

func (r *remover) DeleteObject(_ context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if r.hold != nil {
		<-r.hold
	}
	if r.fail != nil {
		if err := r.fail(*in.Key); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted = append(r.deleted, *in.Bucket+"/"+*in.Key)
	return &s3.DeleteObjectOutput{}, nil
}

func TestRoundBin(t *testing.T) {
	t.Run("deletes-every-round-dropped", func(t *testing.T) {
		r := &remover{}
		b := newRoundBin(context.Background(), r, "work", slog.New(slog.DiscardHandler))
		for i := 0; i < 50; i++ {
			b.drop(fmt.Sprintf("chain/%d", i))
		}
		b.close()
		if len(r.deleted) != 50 || r.deleted[0] != "work/chain/0" || r.deleted[49] != "work/chain/49" {
			t.Errorf("deleted %v, want work/chain/0 … work/chain/49 in order", r.deleted)
		}
	})
	t.Run("failed-deletes-are-not-fatal", func(t *testing.T) {
		var logs strings.Builder
		r := &remover{fail: func(key string) error {
			if key == "chain/1" {
				return apiError("AccessDenied")
			}
			if key == "chain/2" {
				return apiError("NoSuchKey") // gone already: nothing to say
			}
			return nil
		}}
		b := newRoundBin(context.Background(), r, "work", slog.New(slog.NewTextHandler(&logs, nil)))
		for i := 0; i < 4; i++ {
			b.drop(fmt.Sprintf("chain/%d", i))
		}
		b.close()
		if len(r.deleted) != 2 || !strings.Contains(logs.String(), "objects=1") || !strings.Contains(logs.String(), "work prefix") {
			t.Errorf("deleted %v; log %q: want the other rounds deleted and one warning for the refused delete", r.deleted, logs.String())
		}
	})
	t.Run("a-chain-outrunning-its-deletes-waits", func(t *testing.T) {
		r := &remover{hold: make(chan struct{})}
		b := newRoundBin(context.Background(), r, "work", slog.New(slog.DiscardHandler))
		dropped := make(chan int, 10)
		go func() {
			for i := 0; i < 10; i++ {
				b.drop(fmt.Sprintf("chain/%d", i))
				dropped <- i
			}
		}()
		time.Sleep(100 * time.Millisecond)
		// One delete in progress (held), binDepth waiting: the next drop blocks.
		if n := len(dropped); n > binDepth+1 {
			t.Errorf("%d rounds dropped while no delete finished, want at most %d", n, binDepth+1)
		}
		close(r.hold)
		for i := 0; i < 10; i++ {
			<-dropped
		}
		b.close()
		if len(r.deleted) != 10 {
			t.Errorf("deleted %d, want 10", len(r.deleted))
		}
	})
	t.Run("deletes-outlive-a-cancelled-chain", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		r := &remover{}
		b := newRoundBin(ctx, r, "work", slog.New(slog.DiscardHandler))
		cancel()
		b.drop("chain/last")
		b.close()
		if len(r.deleted) != 1 {
			t.Errorf("deleted %v after the chain was cancelled, want its last round object", r.deleted)
		}
	})
}
