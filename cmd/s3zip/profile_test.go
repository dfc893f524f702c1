package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Against another S3 server, auto prices its layout with that server's
// profile, measured once and kept: over the challenge's sizes at one
// worker, AWS's profile chains runs (S3 completes a round without reading
// it again), and versitygw's, which reads every byte it completes, copies
// them instead (issue 32, item 5).
func TestCreatePricesWithTheServersProfile(t *testing.T) {
	srv := cliServer(t)
	srv.CreateBucket(t, "out")
	ep := "--endpoint=" + srv.Endpoint()
	cache := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	if r := s3zip(t, cache, "sample", "--dest", "s3://cli/chal/", "--count", "20", "--seed", "1", ep); r.code != 0 {
		t.Fatalf("sample: %s", r.stderr)
	}
	chains := regexp.MustCompile(`(\d+) chain in (\d+) rounds`)
	rounds := func(t *testing.T, r cliResult) string {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("create: exit %d: %s", r.code, r.stderr)
		}
		m := chains.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("no parts line in %s", r.stdout)
		}
		return m[2]
	}
	create := func(name string, extra ...string) cliResult {
		return s3zip(t, cache, append([]string{"create", "--source", "s3://cli/chal/", "--dest", "s3://out/" + name + ".zip", "--workers", "1", ep}, extra...)...)
	}

	aws := create("aws", "--model", "aws")
	if n := rounds(t, aws); n == "0" || strings.Contains(aws.stdout, "measured") {
		t.Errorf("--model aws: %s rounds of chains, stdout %q; want AWS's chained runs and no measurement", n, aws.stdout)
	}
	first := create("measured")
	if n := rounds(t, first); n != "0" {
		t.Errorf("with versitygw's profile: %s chain rounds, want none (its Completes read every byte again)", n)
	}
	if !strings.Contains(first.stdout, "profile     the S3 server at "+srv.Endpoint()+" measured") {
		t.Errorf("the first run against %s does not say it measured the server: %q", srv.Endpoint(), first.stdout)
	}
	kept, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(cache[0], "XDG_CACHE_HOME="), "s3zip", "profiles", "*.json"))
	if len(kept) != 1 {
		t.Errorf("profiles kept: %v, want one", kept)
	}
	again := create("cached")
	if n := rounds(t, again); n != "0" || strings.Contains(again.stdout, "measured") {
		t.Errorf("second run: %s chain rounds, stdout %q; want the kept profile, not a new measurement", n, again.stdout)
	}
	if left := srv.Leftovers(t, "out"); len(left) > 3*2 { // three archives and their reports
		t.Errorf("left in the work bucket: %v", left)
	}
	if _, err := os.Stat(kept[0]); err != nil {
		t.Error(err)
	}
}

// --model names a profile for a run here: a deployed run prices with AWS's,
// and a file that is not a profile is refused before anything runs.
func TestCreateModelRefusals(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(bad, []byte(`{"WorkerBandwith": 1e6}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"deployed", []string{"--state-machine", "arn:aws:states:us-east-1:123456789012:stateMachine:zip", "--model", "aws"}, "--model prices a run here"},
		{"not-a-profile", []string{"--model", bad, "--endpoint", "http://127.0.0.1:1"}, `unknown field "WorkerBandwith"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s3zip(t, nil, append([]string{"create", "--source", "s3://cli/a/", "--dest", "s3://out/a.zip"}, c.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want a refusal saying %q", r.code, r.stderr, c.want)
			}
		})
	}
}
