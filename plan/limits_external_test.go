package plan_test

import (
	"testing"

	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

// plan is pure and below internal/stepfn (which imports it through
// internal/s3part), so it keeps its own copy of the Map's item limit: the two
// must agree.
func TestMaxJobBytesIsTheMapsBatchLimit(t *testing.T) {
	if plan.MaxJobBytes != stepfn.MaxInputBytesPerBatch {
		t.Errorf("plan.MaxJobBytes = %d, stepfn.MaxInputBytesPerBatch = %d: a part job must fit one Distributed Map item", plan.MaxJobBytes, stepfn.MaxInputBytesPerBatch)
	}
}
