package create

import (
	"context"
	"fmt"
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
