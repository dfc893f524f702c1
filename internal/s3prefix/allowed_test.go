package s3prefix

import (
	"slices"
	"testing"
)

func TestAllowed(t *testing.T) {
	patterns := ParsePatterns(" a/in/ , *, b,")
	if !slices.Equal(patterns, []string{"a/in/", "b"}) {
		t.Fatalf("ParsePatterns = %q", patterns)
	}
	for _, c := range []struct {
		bucket, key string
		want        bool
	}{{"a", "in/x", true}, {"a", "out/x", false}, {"b", "anything", true}, {"c", "in/x", false}} {
		if got := Allowed(patterns, c.bucket, c.key); got != c.want {
			t.Errorf("Allowed(%s/%s) = %v, want %v", c.bucket, c.key, got, c.want)
		}
	}
	if !Allowed(ParsePatterns("*"), "any", "thing") {
		t.Error(`"*" must allow anything`)
	}
}

func TestKeySegment(t *testing.T) {
	if got := KeySegment("exec:1/../é x"); got != "exec_1_..___x" {
		t.Errorf("KeySegment = %q", got)
	}
}
