package s3ref

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestStatus(t *testing.T) {
	answered := &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}},
		Err:      &smithy.GenericAPIError{Code: "SlowDown"},
	}}
	if status, code := Status(fmt.Errorf("context: %w", answered)); status != 503 || code != "SlowDown" {
		t.Errorf("Status = %d %q, want 503 SlowDown", status, code)
	}
	if status, code := Status(errors.New("connection reset")); status != 0 || code != "" {
		t.Errorf("Status of an unanswered request = %d %q, want 0 and no code", status, code)
	}
}

func TestAllowed(t *testing.T) {
	patterns := SplitList(" a/in/ , *, b,")
	if !slices.Equal(patterns, []string{"a/in/", "b"}) {
		t.Fatalf("SplitList = %q", patterns)
	}
	for _, c := range []struct {
		bucket, key string
		want        bool
	}{{"a", "in/x", true}, {"a", "out/x", false}, {"b", "anything", true}, {"c", "in/x", false}} {
		if got := Allowed(patterns, c.bucket, c.key); got != c.want {
			t.Errorf("Allowed(%s/%s) = %v, want %v", c.bucket, c.key, got, c.want)
		}
	}
	if !Allowed(SplitList("*"), "any", "thing") {
		t.Error(`"*" must allow anything`)
	}
}

func TestKeySegment(t *testing.T) {
	if got := KeySegment("exec:1/../é x"); got != "exec_1_..___x" {
		t.Errorf("KeySegment = %q", got)
	}
}

// TestParseCopySourceRoundTrip: what CopySource writes, ParseCopySource
// reads back, keys with "?", "%", spaces and non-ASCII included.
func TestParseCopySourceRoundTrip(t *testing.T) {
	for _, tc := range []struct{ bucket, key, version string }{
		{"src", "d/a.bin", ""},
		{"src", "what?.txt", ""},
		{"src", "100% sure/ünï 名前.bin", "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY"},
	} {
		h := CopySource(tc.bucket, tc.key, tc.version)
		for _, in := range []string{h, "/" + h} {
			b, k, v, err := ParseCopySource(in)
			if err != nil || b != tc.bucket || k != tc.key || v != tc.version {
				t.Errorf("ParseCopySource(%q) = %q, %q, %q, %v; want %q, %q, %q", in, b, k, v, err, tc.bucket, tc.key, tc.version)
			}
		}
	}
	for _, bad := range []string{"", "src", "src/", "/key-only", "src/%zz"} {
		if _, _, _, err := ParseCopySource(bad); err == nil {
			t.Errorf("ParseCopySource(%q) accepted", bad)
		}
	}
}
