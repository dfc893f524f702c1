package create

import (
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/s3prefix"
)

// TestListConcurrencyFromEnv: a deployment sets the planner's listing
// concurrency with LIST_CONCURRENCY; unset, it is s3prefix's default.
func TestListConcurrencyFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
	}{{"", s3prefix.DefaultListConcurrency}, {"4", 4}, {"1", 1}} {
		env := map[string]string{"WORK_BUCKET": "work", "LIST_CONCURRENCY": tc.value}
		cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
		if err != nil || cfg.ListConcurrency != tc.want {
			t.Errorf("LIST_CONCURRENCY=%q: %d (%v), want %d", tc.value, cfg.ListConcurrency, err, tc.want)
		}
	}
	env := map[string]string{"WORK_BUCKET": "work", "LIST_CONCURRENCY": "many"}
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "LIST_CONCURRENCY") {
		t.Errorf("LIST_CONCURRENCY=many: %v, want an error naming LIST_CONCURRENCY", err)
	}
}
