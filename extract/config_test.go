package extract

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3prefix"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/zipread"
)

func TestDerivedPrefix(t *testing.T) {
	cfg := Config{ArchivePrefix: "incoming/"}.Defaults()
	for key, want := range map[string]string{
		"incoming/photos.zip":         "extracted/photos/",
		"incoming/deliveries/d1.ZIP":  "extracted/deliveries/d1/",
		"incoming/no-extension":       "extracted/no-extension/",
		"elsewhere/x.zip":             "extracted/elsewhere/x/",
		"incoming/ünïcode/名前.zip":     "extracted/ünïcode/名前/",
		"incoming/archive.tar.gz.zip": "extracted/archive.tar.gz/",
	} {
		if got, err := cfg.derivedPrefix(key); err != nil || got != want {
			t.Errorf("derivedPrefix(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	if _, err := cfg.derivedPrefix("incoming/.zip"); err == nil {
		t.Error("a key with no name gave a destination")
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{"WORK_BUCKET": "w", "ALLOWED_ARCHIVES": "a/incoming/, b", "BATCH_SIZE": "6"}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BatchSize != 6 || cfg.MaxConcurrency != 100 || cfg.DestinationPrefix != "extracted/" || len(cfg.AllowedArchives) != 2 {
		t.Errorf("config %+v", cfg)
	}
	if !s3prefix.Allowed(cfg.AllowedArchives, "a", "incoming/x.zip") || s3prefix.Allowed(cfg.AllowedArchives, "a", "other/x.zip") || !s3prefix.Allowed(cfg.AllowedArchives, "b", "any") {
		t.Error("allowed archives do not follow the patterns")
	}
	env["BATCH_SIZE"] = "many"
	if _, err := ConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "BATCH_SIZE") {
		t.Errorf("bad BATCH_SIZE: %v", err)
	}
	if _, err := ConfigFromEnv(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "WORK_BUCKET") {
		t.Errorf("no WORK_BUCKET: %v", err)
	}
}

// Bad requests are refused before any S3 call (the planner has no client here).
func TestPlanRefusesBadRequests(t *testing.T) {
	p := &Planner{Config: Config{WorkBucket: "w", AllowedDestinations: []string{"d/extracted/"}}}
	for _, tc := range []struct{ request, want string }{
		{`{"archive":{"bucket":"a","key":"k.zip"},"destination":{"bucket":"d","prefix":"extracted/x"}}`, "must end in /"},
		{`{"archive":{"bucket":"a","key":"k.zip"},"destination":{"bucket":"d","prefix":"other/"}}`, "outside the destinations"},
		{`{"archive":{"bucket":"a","key":"dir/"},"destination":{"bucket":"d","prefix":"extracted/x/"}}`, "key of a ZIP object"},
		{`{"archive":{"bucket":"a","key":"k.zip"},"destination":{"bucket":"d","prefix":"extracted/x/"},"options":{"overwrite":"yes"}}`, "cannot unmarshal"},
		{`{"archive":{"bucket":"a","key":"k.zip"},"destinaton":{"bucket":"d"}}`, "unknown field"},
		{`{"archive":{"bucket":"a","key":"k.zip"},"destination":{"bucket":"d","prefix":"extracted/x/"},"options":{"smallStored":-2}}`, "negative"},
	} {
		_, err := p.Handle(context.Background(), PlanInput{Request: []byte(tc.request), Execution: "e"})
		var re *failure.RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a failure.RequestError saying %q", tc.request, err, tc.want)
		}
	}
}

func TestErrorType(t *testing.T) {
	status := func(code int, errCode string) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}},
			Err:      &smithy.GenericAPIError{Code: errCode},
		}}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("job 3: %w", failure.Checksum("x")), "ChecksumMismatchError"},
		{fmt.Errorf("entry: %w", &failure.SourceChangedError{What: "archive", Bucket: "b", Key: "a", Err: errors.New("412")}), "SourceChangedError"},
		{status(503, "SlowDown"), "TransientError"},
		{status(500, "InternalError"), "TransientError"},
		{status(409, "ConditionalRequestConflict"), "TransientError"},
		{status(403, "AccessDenied"), "Error"},
		{status(412, "PreconditionFailed"), "Error"},
		{context.Canceled, "Error"},
		{&EntriesRefusedError{Archive: "a"}, "RefusedError"},
		{&failure.RequestError{Problems: []string{"x"}}, "RequestError"},
		{&failure.DestinationExistsError{Bucket: "b", Keys: []string{"k"}}, "DestinationExistsError"},
		{&zipread.FormatError{Bucket: "b", Key: "k", What: "x"}, "FormatError"},
		{&IncompleteError{"x"}, "IncompleteError"},
		{&stepfn.TransientError{Err: errors.New("x")}, "TransientError"},
		{&stepfn.TransientError{Op: "op", Err: errors.New("x")}, "TransientError"},
	} {
		got := ErrorType(tc.err)
		if got != tc.want {
			t.Errorf("ErrorType(%v) = %s, want %s", tc.err, got, tc.want)
		}
		// One set of names for both workflows (internal/stepfn), which
		// workflow's TestASLErrorNames holds every state machine to.
		if got != stepfn.TypeUntyped && !slices.Contains(stepfn.Types, got) {
			t.Errorf("ErrorType(%v) = %s, which is not one of internal/stepfn's names", tc.err, got)
		}
	}
}
