package presign

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestParseLifetime(t *testing.T) {
	for s, want := range map[string]time.Duration{"1s": time.Second, "90m": 90 * time.Minute, "7d": MaxLifetime, "168h": MaxLifetime} {
		if d, err := ParseLifetime(s); err != nil || d != want {
			t.Errorf("%s: %v, %v; want %v", s, d, err, want)
		}
	}
	for s, want := range map[string]string{"8d": "1s to 7d", "0s": "1s to 7d", "-1h": "1s to 7d", "1500ms": "whole seconds", "x": `"x" is not a duration`, "": `"" is not a duration`, "1.5d": "not a duration"} {
		if _, err := ParseLifetime(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", s, err, want)
		}
	}
}

// Links die with the credentials that signed them: Expiry says when, or
// warns when it cannot know (a Lambda role's session credentials come from
// the environment without their end).
func TestExpiry(t *testing.T) {
	now := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		creds       aws.Credentials
		want        time.Time
		wantWarning string
	}{
		{"keys", aws.Credentials{AccessKeyID: "AKID"}, now.Add(24 * time.Hour), ""},
		{"session-ends-first", aws.Credentials{SessionToken: "t", CanExpire: true, Expires: now.Add(time.Hour)}, now.Add(time.Hour), "expire at 2026-11-25T21:00:00Z"},
		{"session-outlives", aws.Credentials{SessionToken: "t", CanExpire: true, Expires: now.Add(48 * time.Hour)}, now.Add(24 * time.Hour), ""},
		{"session-end-unknown", aws.Credentials{SessionToken: "t"}, now.Add(24 * time.Hour), "whose end is not known"},
	} {
		got, warning := Expiry(now, 24*time.Hour, tc.creds)
		if !got.Equal(tc.want) || (tc.wantWarning == "") != (warning == "") || !strings.Contains(warning, tc.wantWarning) {
			t.Errorf("%s: %s %q; want %s %q", tc.name, got, warning, tc.want, tc.wantWarning)
		}
	}
}
