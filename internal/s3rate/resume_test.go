package s3rate

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// cutBody delivers its bytes, then fails as a stalled body does.
type cutBody struct{ r io.Reader }

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, ErrStalled
	}
	return n, err
}
func (b *cutBody) Close() error { return nil }

// restGetter answers a resume with the object's bytes of the range asked
// for, recording what was asked.
type restGetter struct {
	object string
	asked  []s3.GetObjectInput
}

func (g *restGetter) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	g.asked = append(g.asked, *in)
	a, b, _ := strings.Cut(strings.TrimPrefix(aws.ToString(in.Range), "bytes="), "-")
	from, _ := strconv.Atoi(a)
	to := len(g.object) - 1
	if b != "" {
		to, _ = strconv.Atoi(b)
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(g.object[from : to+1])), ETag: aws.String(`"e"`)}, nil
}

// A ranged body that stalls resumes from the byte it reached to the end
// of the range it asked for, pinned to the first answer's ETag; a body cut
// after its last byte ends there.
func TestResumeKeepsTheRange(t *testing.T) {
	const object = "0123456789abcdefghijKLMNOP"
	g := &restGetter{object: object}
	in := &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), Range: aws.String("bytes=10-19")}
	out := &s3.GetObjectOutput{Body: &cutBody{strings.NewReader("abcd")}, ETag: aws.String(`"e"`)}
	b, err := io.ReadAll(Resume(context.Background(), g, in, out, 10))
	if err != nil || string(b) != "abcdefghij" {
		t.Fatalf("read %q, %v; want abcdefghij", b, err)
	}
	if len(g.asked) != 1 || aws.ToString(g.asked[0].Range) != "bytes=14-19" || aws.ToString(g.asked[0].IfMatch) != `"e"` {
		t.Errorf("asked %+v; want one GET of bytes=14-19 pinned to \"e\"", g.asked)
	}

	g.asked = nil
	out = &s3.GetObjectOutput{Body: &cutBody{strings.NewReader("abcdefghij")}, ETag: aws.String(`"e"`)}
	b, err = io.ReadAll(Resume(context.Background(), g, in, out, 10))
	if err != nil || string(b) != "abcdefghij" || len(g.asked) != 0 {
		t.Errorf("a body cut after its last byte: read %q, %v, %d GETs; want abcdefghij and none", b, err, len(g.asked))
	}

	whole := &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}
	out = &s3.GetObjectOutput{Body: &cutBody{strings.NewReader("0123")}, ETag: aws.String(`"e"`)}
	b, err = io.ReadAll(Resume(context.Background(), g, whole, out, 0))
	if err != nil || string(b) != object || aws.ToString(g.asked[0].Range) != "bytes=4-" {
		t.Errorf("a whole object: read %q, %v, asked %v; want all of it, the rest from byte 4", b, err, aws.ToString(g.asked[0].Range))
	}
}
