// Package s3err is what an S3 failure means and what to do about it:
// its HTTP status and error code (Status, IsCode), whether the object or
// upload is missing (NotFound), whether the same request may succeed
// again (MayHeal for a code, Transient for any error, the one rule every
// handler uses) and the loop that tries again (Retry).
package s3err

import (
	"errors"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// IsCode reports whether err is an S3 API error with one of codes.
func IsCode(err error, codes ...string) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	for _, c := range codes {
		if ae.ErrorCode() == c {
			return true
		}
	}
	return false
}

// MayHeal reports whether an S3 error code names a failure that may heal
// when the same request is made again: throttling, a timeout, a server
// error, or a conditional write that met another one in progress (409
// ConditionalRequestConflict, which S3's documentation says to retry).
func MayHeal(code string) bool {
	switch code {
	case "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "ConditionalRequestConflict":
		return true
	}
	return false
}

// Status is an S3 failure's HTTP status and API error code, each zero when
// err does not carry it (no answer at all: both zero).
func Status(err error) (status int, code string) {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}
