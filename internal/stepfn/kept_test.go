package stepfn

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// memObjects is a bucket in memory for the results' GetFunc and PutFunc.
type memObjects map[string][]byte

func (m memObjects) put(_ context.Context, bucket, key string, doc []byte) error {
	m[bucket+"/"+key] = doc
	return nil
}

func (m memObjects) get(_ context.Context, bucket, key string, _ int64) ([]byte, error) {
	doc, ok := m[bucket+"/"+key]
	if !ok {
		return nil, fmt.Errorf("no s3://%s/%s", bucket, key)
	}
	return doc, nil
}

// A child that ended with a refusal (the ItemProcessor's Catch) makes
// EachOutput fail with that batch's own error, named by its Error.
func TestEachOutputReportsRefusedBatch(t *testing.T) {
	m := memObjects{}
	ctx := context.Background()
	children := []ChildResult{
		{Status: StatusSucceeded, Output: `{"parts":[]}`},
		{Status: StatusSucceeded, Output: `{"refused":{"Error":"SourceChangedError","Cause":"source s3://b/k changed"}}`},
	}
	res, err := WriteLocalResults(ctx, m.put, "work", "w/map/", children)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = EachOutput(ctx, m.get, res.ResultWriterDetails, func([]byte) error { seen++; return nil })
	var refused *RefusedBatchError
	if !errors.As(err, &refused) || refused.Name != TypeSourceChangedError || seen != 1 {
		t.Fatalf("err = %v (%d outputs before it), want the refused batch's SourceChangedError", err, seen)
	}
	if got := NameOf(fmt.Errorf("finalize: %w", err), nil); got != TypeSourceChangedError {
		t.Errorf("NameOf = %s, want the refused batch's own name", got)
	}
}

// A redrive runs only the batches whose child did not succeed, and keeps
// the others' records.
func TestRunMapRedrivesOnlyUnsucceeded(t *testing.T) {
	prev := []ChildResult{{Status: StatusSucceeded, Output: `"kept"`}, {}, {Status: StatusSucceeded, Output: `"kept"`}, {}}
	ran := make([]bool, len(prev))
	children, err := RunMap(context.Background(), Map{State: "M", MaxConcurrency: 2, Redrive: prev}, []int{0, 1, 2, 3},
		func(_ context.Context, b int) (string, error) { ran[b] = true; return "new", nil })
	if err != nil {
		t.Fatal(err)
	}
	for b, want := range []string{`"kept"`, `"new"`, `"kept"`, `"new"`} {
		if children[b].Output != want || ran[b] != (want == `"new"`) {
			t.Errorf("batch %d: output %s, ran %v; want %s", b, children[b].Output, ran[b], want)
		}
	}
}

// A failed Map returns its children with the error: those that succeeded
// hold their records, for a redrive.
func TestRunMapReturnsChildrenWithFailure(t *testing.T) {
	boom := errors.New("boom")
	children, err := RunMap(context.Background(), Map{State: "M", MaxConcurrency: 1, Retry: Retry{Attempts: 1}}, []int{0, 1, 2},
		func(_ context.Context, b int) (int, error) {
			if b == 1 {
				return 0, boom
			}
			return b, nil
		})
	if !errors.Is(err, boom) || len(children) != 3 || children[0].Status != StatusSucceeded || children[1].Status != "" {
		t.Fatalf("err = %v, children %+v; want the failure and batch 0's record", err, children)
	}
}

// Resumable: a cause a retry may mend, never a cancelled run.
func TestResumable(t *testing.T) {
	transient := func(err error) bool { return errors.As(err, new(*TransientError)) }
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&TransientError{Err: errors.New("500")}, true},
		{fmt.Errorf("batch: %w", &TransientError{Err: errors.New("500")}), true},
		{errors.Join(context.Canceled, &TransientError{Err: errors.New("500")}), false},
		{errors.New("refused"), false},
		{nil, false},
	} {
		if got := Resumable(c.err, transient); got != c.want {
			t.Errorf("Resumable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	k := &KeptError{Execution: "x", Until: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Err: &TransientError{Err: errors.New("500")}}
	if !Resumable(k, transient) {
		t.Error("a KeptError is as resumable as its cause")
	}
}
