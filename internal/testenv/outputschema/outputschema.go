// Package outputschema checks an execution's output against the contract's
// JSON Schema, docs/output.schema.json, with a full JSON Schema validator
// (draft 2020-12, formats asserted): the file users validate against is the
// one the tests use.
package outputschema

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"

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
