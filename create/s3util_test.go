package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3rate"
	"github.com/s3zip/s3zip/internal/stepfn"
)

// cutGetter serves one object whose first cuts bodies end, after half of
// what they were asked for, in a connection reset.
type cutGetter struct {
	S3     // what the test does not call: nil
	data   []byte
	cuts   int
	ranges []string
	ifs    []string
}

func (g *cutGetter) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	from := 0
	if r := aws.ToString(in.Range); r != "" {
		fmt.Sscanf(r, "bytes=%d-", &from)
	}
	g.ranges, g.ifs = append(g.ranges, aws.ToString(in.Range)), append(g.ifs, aws.ToString(in.IfMatch))
	var body io.Reader = bytes.NewReader(g.data[from:])
	if g.cuts > 0 {
		g.cuts--
		half := (len(g.data) - from) / 2
		body = io.MultiReader(bytes.NewReader(g.data[from:from+half]), errReader{&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}})
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(body), ETag: aws.String(`"v1"`)}, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// A work object's body cut by a reset resumes from the byte it reached,
// pinned to its ETag: a reader of lines sees every line whole, never a
// cut one it would take for a corrupt file. Cut more often than it
// resumes, the read fails transient.
func TestObjectBodyResumesWhenCut(t *testing.T) {
	var doc bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&doc, `{"line":%d}`+"\n", i)
	}
	g := &cutGetter{data: doc.Bytes(), cuts: 3}
	got, err := getBytes(context.Background(), g, "work", "jobs.jsonl", 1<<20)
	if err != nil || !bytes.Equal(got, doc.Bytes()) {
		t.Fatalf("read %d of %d bytes, error %v; want all of them", len(got), doc.Len(), err)
	}
	if len(g.ranges) != 4 || g.ranges[0] != "" || g.ranges[1] != fmt.Sprintf("bytes=%d-", doc.Len()/2) || g.ifs[1] != `"v1"` {
		t.Errorf("GETs with ranges %q and If-Match %q: want the whole object, then from each byte reached, pinned to its ETag", g.ranges, g.ifs)
	}

	g = &cutGetter{data: doc.Bytes(), cuts: s3rate.BodyResumes + 1}
	_, err = getBytes(context.Background(), g, "work", "jobs.jsonl", 1<<20)
	var te *stepfn.TransientError
	if !errors.As(err, &te) || len(g.ranges) != s3rate.BodyResumes+1 {
		t.Fatalf("cut %d times: %d GETs, error %v; want %d GETs and a TransientError", s3rate.BodyResumes+1, len(g.ranges), err, s3rate.BodyResumes+1)
	}
}
