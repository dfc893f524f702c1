package zipread

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/internal/zipformat"
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

// TestOpenTrailingBytes: Open finds the end of central directory record
// followed by other bytes, as Info-ZIP and Go's archive/zip do, up to
// maxTrailing of them after the longest comment; a record among those bytes
// whose central directory does not end where it starts is passed over.
func TestOpenTrailingBytes(t *testing.T) {
	env := newEnv(t)
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	fw, err := w.Create("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte("hello"))
	w.SetComment("a comment")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// An end record of an archive that is not there: its central
	// directory of 46 bytes at offset 0 would end where it starts.
	stray := binary.LittleEndian.AppendUint32(nil, zipformat.EndSignature)
	stray = append(stray, 0, 0, 0, 0, 1, 0, 1, 0, 46, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	limit := maxTrailing + zipformat.MaxCommentLen - len("a comment")
	for _, tc := range []struct {
		name     string
		after    []byte
		trailing int64
		zeros    bool
		err      string
	}{
		{"none", nil, 0, false, ""},
		{"zeros", make([]byte, 9735), 9735, true, ""},
		{"text", []byte("not a zip"), 9, false, ""},
		{"a stray end record", append(stray, 1, 2, 3), int64(len(stray) + 3), false, ""},
		{"at the limit", make([]byte, limit), int64(limit), true, ""},
		{"beyond the limit", make([]byte, limit+1), 0, false, "no end of central directory record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "trailing/" + tc.name + ".zip"
			env.srv.PutObject(t, testBucket, key, append(bytes.Clone(good), tc.after...))
			a, err := Open(t.Context(), env.client, testBucket, key)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Open: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if a.Trailing != tc.trailing || a.TrailingZeros != tc.zeros || len(a.Entries) != 1 || a.Entries[0].Name != "a.txt" {
				t.Errorf("Open: %d trailing bytes (zeros %v), entries %+v; want %d (zeros %v) after a.txt's archive", a.Trailing, a.TrailingZeros, a.Entries, tc.trailing, tc.zeros)
			}
			r, err := a.Verify(t.Context(), VerifyOptions{})
			if err != nil || !r.OK() || len(r.Warnings) != min(1, int(tc.trailing)) {
				t.Errorf("Verify: %v, problems %v, warnings %v", err, r.Problems, r.Warnings)
			}
		})
	}
}
