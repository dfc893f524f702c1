package create

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
)

// FuzzDecodeRequest: DecodeRequest and Validate never panic, every refusal
// is a failure.RequestError, and an accepted request survives encoding and decoding
// unchanged and valid. Seeds: testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"source":{"bucket":"src","prefix":"p/"},"destination":{"bucket":"dst","key":"a.zip"}}`))
	f.Add([]byte(`{"requestObject":{"bucket":"ctl","key":"requests/x.json"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeRequest(data)
		if err != nil {
			assertRequestError(t, "DecodeRequest", err)
			return
		}
		verr := req.Validate()
		if verr != nil {
			assertRequestError(t, "Validate", verr)
			if again := req.Validate(); again == nil || again.Error() != verr.Error() {
				t.Fatalf("Validate is not deterministic: %v, then %v", verr, again)
			}
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(req); err != nil {
			t.Fatalf("an accepted request does not encode: %v", err)
		}
		req2, err := DecodeRequest(buf.Bytes())
		if err != nil {
			// Encoding may lengthen a document (U+2028 becomes \u2028); only
			// the size check may refuse the re-encoded request.
			if buf.Len() > MaxRequestBytes && strings.Contains(err.Error(), "at most") {
				return
			}
			t.Fatalf("re-encoded request %s is refused: %v", buf.Bytes(), err)
		}
		if err := req2.Validate(); err != nil {
			t.Fatalf("re-encoded request %s is invalid: %v", buf.Bytes(), err)
		}
		a, _ := json.Marshal(req)
		b, _ := json.Marshal(req2)
		if !bytes.Equal(a, b) {
			t.Fatalf("request changed in a round trip:\n%s\n%s", a, b)
		}
	})
}

func assertRequestError(t *testing.T, where string, err error) {
	t.Helper()
	var re *failure.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("%s: %T %v, want a RequestError", where, err, err)
	}
	if len(re.Problems) == 0 {
		t.Fatalf("%s: a failure.RequestError with no problem", where)
	}
	for _, p := range re.Problems {
		if strings.TrimSpace(p) == "" {
			t.Fatalf("%s: an empty problem in %q", where, re.Problems)
		}
	}
}
