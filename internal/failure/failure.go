// Package failure defines, once, the conditions both workflows (create and
// extract), the planner's core and the inventory reader name the same way:
// a request with problems, bytes that do not have their checksum, a source
// that changed after planning, a destination that already holds objects,
// a hard limit. Each Go type is named as the state machines' ErrorEquals
// spells its condition (internal/stepfn's Type* names), so one condition
// has one name from the code to the ASL.
package failure

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/internal/s3err"
)

// RequestError says a request is wrong; Problems say what to fix, each.
type RequestError struct {
	Of       string // the request's kind in the message ("extract"); empty for create's
	Problems []string
}

// Request is a RequestError of one problem.
func Request(of, format string, a ...any) *RequestError {
	return &RequestError{Of: of, Problems: []string{fmt.Sprintf(format, a...)}}
}

func (e *RequestError) Error() string {
	what := "bad request"
	if e.Of != "" {
		what = "bad " + e.Of + " request"
	}
	if len(e.Problems) == 1 {
		return what + ": " + e.Problems[0]
	}
	return fmt.Sprintf("%s (%d problems): %s", what, len(e.Problems), strings.Join(e.Problems, "; "))
}

// ChecksumMismatchError says bytes do not have the checksum they must
// have: read, decoded, assembled or stored, against the one the plan, the
// archive's central directory or a report gives.
type ChecksumMismatchError struct {
	What      string // the bytes checked: `entry "a.txt"`, `inventory file "k"`
	Algorithm string // "CRC-32", "MD5"
	Got, Want string // as the algorithm is written (hex)
	Source    string // who gives Want: "the plan", "the report"
	Fix       string // what it means and what to do
	// Msg is the whole message where the fields above do not tell it (a
	// decoder that failed, S3 refusing a checksum it computed).
	Msg string
}

func (e *ChecksumMismatchError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("%s: %s is %s, %s says %s (%s)", e.What, e.Algorithm, e.Got, e.Source, e.Want, e.Fix)
}

// Checksum is a ChecksumMismatchError told by its message.
func Checksum(format string, a ...any) *ChecksumMismatchError {
	return &ChecksumMismatchError{Msg: fmt.Sprintf(format, a...)}
}

// SourceChangedError says an object the run read (a source, or the archive
// being extracted) changed or vanished after it was planned.
type SourceChangedError struct {
	What        string // "source" (when empty) or "archive"
	Bucket, Key string
	ETag        string // the ETag planned, when the message should give it
	When        string // "after planning" (when empty), "during the extraction"
	Fix         string // what to do; create's advice when empty
	Err         error
}

// createFix is what to do when a source of an archive changed.
const createFix = "run again to archive the objects as they are now " +
	"(from an S3 Inventory report or a manifest that pins ETags: a newer one, or --source to list them now)"

func (e *SourceChangedError) Error() string {
	what, when, fix := cmp.Or(e.What, "source"), cmp.Or(e.When, "after planning"), cmp.Or(e.Fix, createFix)
	why := "its ETag no longer matches"
	if status, code := s3err.Status(e.Err); code != "" {
		why = "S3 answered " + code + ": " + why
	} else if status != 0 {
		why = fmt.Sprintf("S3 answered %d: %s", status, why)
	} else if e.Err != nil {
		why = e.Err.Error()
	}
	if e.ETag != "" {
		why += "; it was ETag " + e.ETag
	}
	return fmt.Sprintf("%s s3://%s/%s changed or was deleted %s (%s); %s", what, e.Bucket, e.Key, when, why, fix)
}

func (e *SourceChangedError) Unwrap() error { return e.Err }

// DestinationExistsError says objects hold the keys a run would write: the
// archive's key (Key), or where an extraction's entries would go (Keys).
// They existed and overwriting was not asked, or another writer took them
// after planning.
type DestinationExistsError struct {
	Bucket string
	Key    string   // the archive's key
	Keys   []string // the objects an extraction would replace
	// Report is an earlier extraction's report where this extraction's
	// would go: an object the extraction writes, but none of the archive's entries.
	Report string
	// Appeared: an overwriting extraction met Keys after planning, when
	// they were free; it replaces only what was there when it planned.
	Appeared bool
	Msg      string // what happened to Key, when it is not the plain case
}

func (e *DestinationExistsError) Error() string {
	if len(e.Keys) > 0 || e.Report != "" {
		return e.entries()
	}
	if e.Msg != "" {
		return fmt.Sprintf("destination s3://%s/%s: %s", e.Bucket, e.Key, e.Msg)
	}
	return fmt.Sprintf("destination s3://%s/%s already exists; set options.overwrite to replace it", e.Bucket, e.Key)
}

// shownKeys is how many of the keys an error names; it counts the rest.
const shownKeys = 5

func (e *DestinationExistsError) entries() string {
	shown := e.Keys[:min(len(e.Keys), shownKeys)]
	more := ""
	if len(e.Keys) > len(shown) {
		more = fmt.Sprintf(" … and %d more", len(e.Keys)-len(shown))
	}
	if e.Appeared {
		return fmt.Sprintf("%d objects appeared in s3://%s where the archive's entries would go after the extraction was planned: %s%s (another writer is using the prefix; --overwrite replaces only what was there when the run planned: run again)",
			len(e.Keys), e.Bucket, strings.Join(shown, ", "), more)
	}
	var there []string
	if len(e.Keys) > 0 {
		objects := "objects"
		if len(e.Keys) == 1 {
			objects = "object"
		}
		there = append(there, fmt.Sprintf("%d %s where the archive's entries would go: %s%s", len(e.Keys), objects, strings.Join(shown, ", "), more))
	}
	if e.Report != "" {
		there = append(there, "the report of an earlier extraction into the prefix, "+e.Report)
	}
	return fmt.Sprintf("s3://%s already holds %s (use --overwrite to replace them)", e.Bucket, strings.Join(there, "; and "))
}

// LimitError says a run does not fit a hard limit of S3, Step Functions or
// the ZIP format; Msg says which and what to change.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

// Limit is a LimitError.
func Limit(format string, a ...any) *LimitError { return &LimitError{Msg: fmt.Sprintf(format, a...)} }
