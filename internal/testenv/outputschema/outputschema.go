// Package outputschema checks an execution's output against the contract's
// JSON Schema, docs/output.schema.json, with a full JSON Schema validator
// (draft 2020-12, formats asserted): the file users validate against is the
// one the tests use.
package outputschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Path is docs/output.schema.json in this repository.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "output.schema.json")
}

// Validate returns nil when output is valid against the schema, else every
// violation.
func Validate(output []byte) error {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(Path())
	if err != nil {
		return fmt.Errorf("schema %s: %w", Path(), err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(output))
	if err != nil {
		return fmt.Errorf("output is not JSON: %w", err)
	}
	if err := schema.Validate(doc); err != nil {
		return fmt.Errorf("output does not match %s: %w", Path(), err)
	}
	return nil
}

// Decode is what a test of an execution's output starts with: every
// violation of the schema reported (the test goes on), the output decoded
// into T, the type the finalizer wrote it from (the test stops when it does
// not decode). T is the caller's: this package serves the workflows and
// imports none of them.
func Decode[T any](t testing.TB, output []byte) T {
	t.Helper()
	if err := Validate(output); err != nil {
		t.Errorf("%v", err)
	}
	var res T
	if err := json.Unmarshal(output, &res); err != nil {
		t.Fatal(err)
	}
	return res
}
