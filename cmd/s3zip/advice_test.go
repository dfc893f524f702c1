package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `s3zip plan --strategy chain` says chain is the wrong tool, with both
// predictions, for thousands of tiny objects, and says nothing of the kind
// for the challenge set, where chains pay.
func TestPlanChainAdvice(t *testing.T) {
	var csv strings.Builder
	csv.WriteString("key,size\n")
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 6000; i++ {
		fmt.Fprintf(&csv, "tiny/%05d,%d\n", i, rng.IntN(2049))
	}
	tiny := filepath.Join(t.TempDir(), "tiny.csv")
	if err := os.WriteFile(tiny, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		args   []string
		advice bool
	}{
		{"tiny-objects", []string{"--manifest", tiny, "--workers", "8"}, true},
		{"challenge", []string{"--synthetic", "challenge", "--workers", "8"}, false},
		{"challenge-1-worker", []string{"--synthetic", "challenge"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runPlan(context.Background(), append([]string{"--strategy", "chain"}, c.args...), &out); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			has := strings.Contains(got, "chain is the wrong tool")
			if has != c.advice {
				t.Fatalf("advice shown: %v, want %v:\n%s", has, c.advice, got)
			}
			if c.advice && !strings.Contains(got, "where auto is predicted") {
				t.Errorf("the advice does not give auto's prediction beside chain's:\n%s", got)
			}
		})
	}
	// auto asked for: no advice, whatever the set.
	var out bytes.Buffer
	if err := runPlan(context.Background(), []string{"--manifest", tiny}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "wrong tool") {
		t.Errorf("advice for auto:\n%s", out.String())
	}
}
