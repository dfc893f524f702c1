package create

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// getCounter counts the GETs of each object.
type getCounter struct {
	*s3.Client
	mu   sync.Mutex
	gets map[string]int // "bucket/key" → GETs
}

func (c *getCounter) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	c.mu.Lock()
	c.gets[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)]++
	c.mu.Unlock()
	return c.Client.GetObject(ctx, in, opts...)
}

// TestHandleReadsTheRequestOnce: the planner's handler reads a request
// object once, whether the request goes on to the read pass or straight to
// the layout. Read twice, the two reads could see two versions of it (an
// EventBridge rule's object replaced in between).
func TestHandleReadsTheRequestOnce(t *testing.T) {
	for _, c := range []struct {
		compression string
		want        string // the handler's result: a Job or a ReadPlan
	}{
		{"none", "*create.Job"},
		{"deflate", "*create.ReadPlan"},
	} {
		t.Run(c.compression, func(t *testing.T) {
			e := newEnv(t, []object{{"in/a.txt", 1000, s3test.ChecksumCRC32}})
			e.srv.CreateBucket(t, "control")
			e.srv.PutObject(t, "control", "req.json", request("duo", "in/", "out/a.zip", fmt.Sprintf(`,"compression":%q`, c.compression)))
			counter := &getCounter{Client: e.s3, gets: map[string]int{}}
			pl := &Planner{S3: counter, Config: Config{WorkBucket: "work", ControlBucket: "control"}}
			in := PlanInput{Request: json.RawMessage(`{"requestObject":{"bucket":"control","key":"req.json"}}`), Execution: "exec-once"}
			out, err := pl.Handle(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%T", out); got != c.want {
				t.Errorf("Handle returned %s, want %s", got, c.want)
			}
			if n := counter.gets["control/req.json"]; n != 1 {
				t.Errorf("Handle read the request object %d times, want once", n)
			}
		})
	}
}
