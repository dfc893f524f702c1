package create

import (
	"fmt"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/smithy-go"
)

// A source that changed is named with S3's answer, not the SDK's whole
// error chain, and the advice fits every kind of source: running again
// re-reads an inventory report or a pinned manifest, so those need a newer
// one (issue 35, rough edge 2).
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
		msg := (&failure.SourceChangedError{Bucket: "b", Key: "k", Err: c.err}).Error()
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
