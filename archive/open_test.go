package archive

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// otherTail answers Open's suffix GET as if the object had been replaced
// between it and the HEAD (another ETag).
type otherTail struct{ Client }

func (c otherTail) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := c.Client.GetObject(ctx, in, opts...)
	if err == nil && in.IfMatch == nil {
		out.ETag = aws.String(`"replaced"`)
	}
	return out, err
}

// Open reads a small archive's end records and central directory with the
// GET it sends beside its HEAD: one round trip, not three. A central
// directory longer than that read takes one GET more; a tail that is not
// the HEAD's object is not used, and the end is read again with If-Match.
func TestOpenReadsTheEndBesideItsHead(t *testing.T) {
	env := newEnv(t)
	small := buildZip(t, []testEntry{{name: "a.txt", data: []byte("hello")}, {name: "b.bin", data: s3test.Bytes(1, 200_000)}})
	var many []testEntry
	for i := 0; i < 20_000; i++ { // 20,000 central headers of 46 + 14 bytes: more than openTail
		many = append(many, testEntry{name: fmt.Sprintf("dir/%08d.txt", i), data: []byte{byte(i)}})
	}
	large := buildZip(t, many)
	cases := []struct {
		name    string
		b       []byte
		entries int
		wrap    func(Client) Client
		gets    int64
	}{
		{"small", small, 2, nil, 1},
		{"central directory beyond the tail", large, len(many), nil, 2},
		{"tail of another object", small, 2, func(c Client) Client { return otherTail{c} }, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := "open/" + c.name + ".zip"
			env.srv.PutObject(t, testBucket, key, c.b)
			counter := s3metrics.New()
			var client Client = s3.New(env.client.Options(), counter.Option())
			if c.wrap != nil {
				client = c.wrap(client)
			}
			a, err := Open(t.Context(), client, testBucket, key)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if len(a.Entries) != c.entries || a.Size != int64(len(c.b)) {
				t.Fatalf("opened %d entries of a %d-byte object, want %d of %d", len(a.Entries), a.Size, c.entries, len(c.b))
			}
			got := counter.Snapshot()
			if got["HeadObject"] != 1 || got["GetObject"] != c.gets {
				t.Errorf("Open made %v, want 1 HeadObject and %d GetObject", got, c.gets)
			}
			if _, err := a.Verify(t.Context(), VerifyOptions{}); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}
