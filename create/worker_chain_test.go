package create

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
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
	S3      // what the test does not call: nil
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

// roundKey matches a chain round object's key (chainKey): part, attempt,
// round.
var roundKey = regexp.MustCompile(`chain/[0-9a-f]{3}/(\d+-[0-9a-f]+)-(\d+)$`)

// roundsAhead holds each chain round's CompleteMultipartUpload, up to hold,
// until the next round's upload is created, and records whether it was:
// a worker that opens the next round while a round is built has it open
// before the round completes; one that opens it after never does.
type roundsAhead struct {
	S3
	hold time.Duration

	mu      sync.Mutex
	created map[string]chan struct{} // part-attempt-round → closed once created
	ahead   map[string]bool          // part-attempt-round → the next round was open when it completed
}

func (h *roundsAhead) opened(chain string, round int) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := fmt.Sprintf("%s-%d", chain, round)
	if h.created[k] == nil {
		h.created[k] = make(chan struct{})
	}
	return h.created[k]
}

func (h *roundsAhead) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	out, err := h.S3.CreateMultipartUpload(ctx, in, opts...)
	if m := roundKey.FindStringSubmatch(aws.ToString(in.Key)); m != nil && err == nil {
		r, _ := strconv.Atoi(m[2])
		close(h.opened(m[1], r))
	}
	return out, err
}

func (h *roundsAhead) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if m := roundKey.FindStringSubmatch(aws.ToString(in.Key)); m != nil {
		r, _ := strconv.Atoi(m[2])
		ahead := false
		select {
		case <-h.opened(m[1], r+1):
			ahead = true
		case <-time.After(h.hold):
		}
		h.mu.Lock()
		h.ahead[fmt.Sprintf("%s-%d", m[1], r)] = ahead
		h.mu.Unlock()
	}
	return h.S3.CompleteMultipartUpload(ctx, in, opts...)
}

// A chain's next round is opened, and its pieces sent, while a round is
// built: every round but the last completes with the next one's upload
// already open (partwork.ChainSteps prices two round trips a round, not three).
// The archive is whole all the same.
func TestChainOpensTheNextRoundWhileARoundIsBuilt(t *testing.T) {
	e := newEnv(t, mixedObjects("m/", s3test.ChecksumNone))
	h := &roundsAhead{S3: e.s3, hold: 2 * time.Second, created: map[string]chan struct{}{}, ahead: map[string]bool{}}
	r := e.runner()
	r.S3 = h
	if _, err := r.Run(context.Background(), request("chain", "m/", "chain.zip", ""), "ahead"); err != nil {
		t.Fatal(err)
	}
	e.checkArchive(t, "chain.zip", "m/")
	rounds := 0
	for k, ahead := range h.ahead {
		m := regexp.MustCompile(`^(.*)-(\d+)$`).FindStringSubmatch(k)
		r, _ := strconv.Atoi(m[2])
		select {
		case <-h.opened(m[1], r+1):
		default:
			continue // the chain's last round: no next one was ever opened
		}
		rounds++
		if !ahead {
			t.Errorf("chain %s: round %d completed before round %d's upload was opened", m[1], r, r+1)
		}
	}
	if rounds == 0 {
		t.Fatal("no chain round was followed by another: the test needs chains of two rounds or more")
	}
}

// silentRoundCreate never answers the CreateMultipartUpload of a chain's
// second round: it waits for the request's context, as a connection that
// went quiet would.
type silentRoundCreate struct{ S3 }

func (s silentRoundCreate) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	if m := roundKey.FindStringSubmatch(aws.ToString(in.Key)); m != nil && m[2] == "1" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.S3.CreateMultipartUpload(ctx, in, opts...)
}

// A chain round's create is made without the chain's cancellation (so that
// an answer is never dropped), but not without end: one that never answers
// fails the run within roundCreateTimeout, and the run leaves nothing.
func TestChainRoundCreateIsBounded(t *testing.T) {
	defer func(d time.Duration) { roundCreateTimeout = d }(roundCreateTimeout)
	roundCreateTimeout = time.Second
	e := newEnv(t, mixedObjects("m/", s3test.ChecksumNone))
	r := e.runner()
	r.S3 = silentRoundCreate{e.s3}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err := r.Run(ctx, request("chain", "m/", "chain.zip", ""), "silent")
	if err == nil || !strings.Contains(err.Error(), "CreateMultipartUpload") {
		t.Fatalf("run error %v, want the round's CreateMultipartUpload named", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the run failed after %v, want within a few round timeouts (%v)", took, roundCreateTimeout)
	}
	e.assertClean(t)
}

// A chain part's worker learns the CRC-32s its headers need and the plan
// lacks (the planner asks for none of them: plan.Plan.CRCsNeeded), from
// S3's store, else a probe, else a read, before its first round; the
// archive is whole, whether the sources store a CRC-32 or not.
func TestChainWorkerLearnsItsCRCs(t *testing.T) {
	for _, checksum := range []s3test.Checksum{s3test.ChecksumCRC32, s3test.ChecksumNone} {
		t.Run("checksum-"+string(checksum), func(t *testing.T) {
			e := newEnv(t, []object{
				{"in/a.bin", 1 * mib, checksum}, {"in/b.txt", 2000, checksum}, {"in/c.bin", 3 * mib, checksum},
				{"in/d.bin", 6 * mib, checksum}, {"in/e.bin", 300 << 10, checksum},
			})
			res, err := e.runner().Run(context.Background(), request("chain", "in/", "out/a.zip", ""), "exec-chain-crcs")
			if err != nil {
				t.Fatal(err)
			}
			if res.Output.Stats.ChainParts == 0 {
				t.Fatalf("stats %+v: no chain part: the case tests nothing", res.Output.Stats)
			}
			e.checkArchive(t, "out/a.zip", "in/")
			e.assertClean(t)
		})
	}
}
