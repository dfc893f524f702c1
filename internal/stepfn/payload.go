package stepfn

import (
	"encoding/json"
	"fmt"
)

// Step Functions' payload quotas, which the local runs enforce so that a run
// that would end with States.DataLimitExceeded on AWS fails here too
// (tests/asl's adapter enforces the same on the ASL itself).
const (
	// MaxPayloadBytes bounds every state's input and output, each Map
	// child's result and an execution's input: 256 KiB of JSON.
	MaxPayloadBytes = 256 << 10
	// MaxInputBytesPerBatch is the ItemBatcher's MaxInputBytesPerBatch in
	// statemachine/*.asl.json (every Map): 192 KiB of items and BatchInput
	// per child, leaving room for Lambda's wrapper.
	MaxInputBytesPerBatch = 196608
)

// DataLimitError is States.DataLimitExceeded: a payload over Step Functions'
// quota. On AWS it ends the execution at once (States.ALL does not catch it,
// so the Abort state never runs and the work is left to the lifecycle rule),
// which is why anything that grows with the number of entries goes through S3
// objects instead. The local runs still run Abort: they leave nothing.
type DataLimitError struct {
	What  string // the payload: "state BuildParts input", "BuildParts child 3 result", …
	Bytes int
	Limit int
}

func (e *DataLimitError) Error() string {
	return fmt.Sprintf("States.DataLimitExceeded: %s is %d bytes of JSON, over Step Functions' %d; what grows with the entries must go through S3, not the state", e.What, e.Bytes, e.Limit)
}

// Payload is v's JSON, refused when over MaxPayloadBytes; what names it in
// the error.
func Payload(what string, v any) ([]byte, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(doc) > MaxPayloadBytes {
		return nil, &DataLimitError{What: what, Bytes: len(doc), Limit: MaxPayloadBytes}
	}
	return doc, nil
}

// BatchItems is the ItemBatcher: each child's input, wrap(batch), where a
// batch is consecutive items, at most per of them and at most
// MaxInputBytesPerBatch bytes of child input (the JSON of wrap(batch), which
// adds the BatchInput), as Step Functions cuts them. what names the Map
// state in errors.
func BatchItems[T, In any](items []T, per int, wrap func([]T) In, what string) ([]In, error) {
	empty, err := json.Marshal(wrap(nil))
	if err != nil {
		return nil, err
	}
	overhead := len(empty) - len("null") + len("[]") // wrap(nil) marshals Items as null
	per = max(per, 1)
	var out []In
	start, size := 0, overhead
	for i, it := range items {
		doc, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		n := len(doc)
		if overhead+n > MaxInputBytesPerBatch {
			return nil, &DataLimitError{What: fmt.Sprintf("%s item %d alone (with the BatchInput)", what, i), Bytes: overhead + n, Limit: MaxInputBytesPerBatch}
		}
		if i > start && (i-start >= per || size+1+n > MaxInputBytesPerBatch) {
			out = append(out, wrap(items[start:i]))
			start, size = i, overhead
		}
		if i > start {
			size++ // the comma
		}
		size += n
	}
	if start < len(items) {
		out = append(out, wrap(items[start:]))
	}
	return out, nil
}
