package failure

import (
	"fmt"
	"strings"
	"testing"
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
