package failure

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
)

// An extraction refused for what its prefix holds names a few keys and
// counts the rest, and names an earlier extraction's report as what it is,
// apart from the entries.
func TestDestinationExistsErrorSaysWhatIsThere(t *testing.T) {
	var keys []string
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("restored/f%02d.txt", i))
	}
	for _, tc := range []struct {
		name   string
		err    *DestinationExistsError
		want   string
		banned []string
	}{
		{"entries-and-report", &DestinationExistsError{Bucket: "b", Keys: keys, Report: "restored/.s3zip-extract-report.json"},
			"s3://b already holds 12 objects where the archive's entries would go: restored/f00.txt, restored/f01.txt, restored/f02.txt, restored/f03.txt, restored/f04.txt … and 7 more; " +
				"and the report of an earlier extraction into the prefix, restored/.s3zip-extract-report.json (use --overwrite to replace them)", []string{"13 objects", "f05"}},
		{"report-only", &DestinationExistsError{Bucket: "b", Report: "restored/.s3zip-extract-report.json"},
			"s3://b already holds the report of an earlier extraction into the prefix, restored/.s3zip-extract-report.json (use --overwrite to replace them)", []string{"objects where"}},
		{"one-entry", &DestinationExistsError{Bucket: "b", Keys: keys[:1]},
			"s3://b already holds 1 object where the archive's entries would go: restored/f00.txt (use --overwrite to replace them)", []string{"report", "more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.Error()
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			for _, b := range tc.banned {
				if strings.Contains(got, b) {
					t.Errorf("says %q: %s", b, got)
				}
			}
		})
	}
}

// A source that changed is named with S3's answer, not the SDK's whole
// error chain, and the advice fits every kind of source: running again
// re-reads an inventory report or a pinned manifest, so those need a newer
// one.
func TestSourceChangedSaysWhatToDo(t *testing.T) {
	sdk := fmt.Errorf("operation error S3: GetObject, https response error StatusCode: 412, RequestID: x, api error PreconditionFailed: At least one of the pre-conditions you specified did not hold: %w",
		&smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"})
	for _, c := range []struct {
		err  error
		want string
	}{
		{sdk, "(S3 answered PreconditionFailed: its ETag no longer matches)"},
		{fmt.Errorf("now 5 bytes, planned 7"), "(now 5 bytes, planned 7)"},
	} {
		msg := (&SourceChangedError{Bucket: "b", Key: "k", Err: c.err}).Error()
		for _, want := range []string{"source s3://b/k changed or was deleted after planning " + c.want, "S3 Inventory report", "a newer one", "--source"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "operation error") || strings.Contains(msg, "RequestID") {
			t.Errorf("%q carries the SDK's text", msg)
		}
	}
}
