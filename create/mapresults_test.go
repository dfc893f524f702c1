package create

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// slowStore is objects in memory whose batches' CRC-32 objects answer
// after a round trip, counting how many are read at once.
type slowStore struct {
	S3            // what the test does not call: nil
	mu            sync.Mutex
	objects       map[string][]byte
	inFlight, max int
}

func (s *slowStore) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	s.mu.Lock()
	s.objects[*in.Key] = b
	s.mu.Unlock()
	return &s3.PutObjectOutput{}, err
}

func (s *slowStore) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	crcs := strings.Contains(*in.Key, "/crcs/")
	s.mu.Lock()
	b, ok := s.objects[*in.Key]
	if crcs {
		s.inFlight++
		s.max = max(s.max, s.inFlight)
	}
	s.mu.Unlock()
	if crcs {
		time.Sleep(20 * time.Millisecond)
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}
	if !ok {
		return nil, fmt.Errorf("no object %s", *in.Key)
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b)), ContentLength: aws.Int64(int64(len(b)))}, nil
}

// The finalizer reads the batches' CRC-32 objects side by side, at most
// plan.ResultReadsInFlight at once (the model prices them so), and every
// part gets its batch's CRC-32s.
func TestMapResultsCRCsReadSideBySide(t *testing.T) {
	const batches = 80
	ctx := context.Background()
	st := &slowStore{objects: map[string][]byte{}}
	job := &Job{WorkBucket: "work", WorkPrefix: "w/run/"}
	var children []stepfn.ChildResult
	for b := 1; b <= batches; b++ {
		first := &plan.PartJob{Part: plan.Part{Number: b}}
		doc, _ := json.Marshal(batchCRCs{Parts: map[string]map[string]string{partKey(0, b): {fmt.Sprint(b): fmt.Sprintf("%08x", b)}}})
		st.objects[crcsKey(job, first)] = doc
		out, _ := json.Marshal(BatchResult{Parts: []PartResult{{Part: b}}, CRCsKey: crcsKey(job, first)})
		children = append(children, stepfn.ChildResult{Status: "SUCCEEDED", Output: string(out)})
	}
	res, err := stepfn.WriteLocalResults(ctx, putter(st), job.WorkBucket, job.WorkPrefix+"map/", children)
	if err != nil {
		t.Fatal(err)
	}
	crcs := plan.NewCRCs(batches + 1)
	parts, err := readMapResults(ctx, st, job, res.ResultWriterDetails, crcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != batches {
		t.Fatalf("%d parts, want %d", len(parts), batches)
	}
	for _, p := range parts {
		if got, want := crcs.Get(plan.EntryIndex(p.Part)), plan.KnownCRC(uint32(p.Part)); got != want {
			t.Errorf("entry %d: CRC-32 %v, want %v from its batch's object", p.Part, got, want)
		}
	}
	if st.max < 2 || st.max > plan.ResultReadsInFlight {
		t.Errorf("at most %d CRC-32 objects read at once, want 2 to %d", st.max, plan.ResultReadsInFlight)
	}
	t.Logf("%d batches' CRC-32 objects, at most %d read at once", batches, st.max)
}
