package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "16MiB": 16 << 20, "16mib": 16 << 20, "16 MiB": 16 << 20, "1.5GiB": 3 << 29, "500MB": 500e6,
		"2GB": 2e9, "64k": 64 << 10, "64K": 64 << 10, "5M": 5 << 20, "1T": 1 << 40, "1TiB": 1 << 40, "3kb": 3000, "7B": 7, "-1": -1,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "16Mx", "1.5", "0.3KB7", "1e3", "16 mebibytes", "1.0000001KiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// Every size flag takes units: the plan with --split-size 1MiB is the plan
// with --split-size 1048576 (issue 35, rough edge 11).
func TestSizeFlagsTakeUnits(t *testing.T) {
	plan := func(size string) string {
		var out bytes.Buffer
		if err := runPlan(context.Background(), []string{"--synthetic", "small", "--count", "2000", "--split-size", size, "--part-size", "8MiB"}, &out); err != nil {
			t.Fatalf("plan --split-size %s: %v", size, err)
		}
		var kept []string
		for _, line := range strings.Split(out.String(), "\n") {
			if !strings.HasPrefix(line, "planned in") { // the timing differs
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	units, bytes := plan("1MiB"), plan("1048576")
	if units != bytes {
		t.Errorf("--split-size 1MiB planned\n%s\n--split-size 1048576 planned\n%s", units, bytes)
	}
	if !strings.Contains(units, "archives        13, each a whole ZIP") {
		t.Errorf("--split-size 1MiB over 2,000 small objects made one archive:\n%s", units)
	}
}
