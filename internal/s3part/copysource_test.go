package s3part

import "testing"

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
