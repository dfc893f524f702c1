package s3err

import (
	"errors"
	"fmt"
	"net/http"
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
