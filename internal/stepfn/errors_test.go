package stepfn

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

type refused struct{}

func (refused) Error() string { return "refused" }

// NameOf reports the first kind in the table's order found anywhere in the
// chain, however it is wrapped, and TypeUntyped for the rest; the names are
// the ones the ASL spells.
func TestNameOfFollowsTheTableOrder(t *testing.T) {
	kinds := []ErrorKind{
		{Name: TypeRefusedError, Is: IsA[refused]},
		{Name: TypeTransientError, Is: IsA[*TransientError]},
	}
	transient := &TransientError{Err: errors.New("503")}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"bare", transient, TypeTransientError},
		{"wrapped", fmt.Errorf("GetObject s3://b/k: %w", transient), TypeTransientError},
		{"joined", errors.Join(errors.New("x"), transient), TypeTransientError},
		{"first-in-table-wins", &TransientError{Err: refused{}}, TypeRefusedError},
		{"none", errors.New("plain"), TypeUntyped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NameOf(tc.err, kinds); got != tc.want {
				t.Errorf("NameOf(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
	for _, name := range RetryableTypes {
		if !slices.Contains(Types, name) {
			t.Errorf("retryable %s is not one of Types", name)
		}
	}
}

// A TransientError says what failed on what when it knows, and that a retry
// may help either way.
func TestTransientErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  *TransientError
		want string
	}{
		{&TransientError{Op: "GetObject s3://b/k", Err: errors.New("503")}, "GetObject s3://b/k: 503 (transient; retrying may help)"},
		{&TransientError{Err: errors.New("list s3://b/p: 503")}, "list s3://b/p: 503 (transient; retrying may help)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
