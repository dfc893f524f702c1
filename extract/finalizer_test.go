package extract

import (
	"fmt"
	"testing"
)

// The Summary (the execution's output) names the most common types only,
// the rest summed, so thousands of distinct kept types cannot take it past
// 256 KiB; nothing is lost from the count.
func TestSummaryNamesTheMostCommonTypes(t *testing.T) {
	counts := map[string]int{"text/html": 50, "image/png": 7}
	for i := range 5000 {
		counts[fmt.Sprintf("application/x-%04d", i)] = 1
	}
	got := mostTypes(counts, summaryTypes)
	if len(got) != summaryTypes+1 || got["text/html"] != 50 || got["image/png"] != 7 || got[OtherTypes] != 5000-(summaryTypes-2) {
		t.Fatalf("%d types, html %d, png %d, other %d", len(got), got["text/html"], got["image/png"], got[OtherTypes])
	}
	small := map[string]int{"a": 1}
	if got := mostTypes(small, summaryTypes); len(got) != 1 || got["a"] != 1 {
		t.Errorf("a short count changed: %v", got)
	}
}
