package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// Against another S3 server, auto prices its layout with that server's
// profile, measured once and kept: over the challenge's sizes at one
// worker, AWS's profile chains runs (S3 completes a round without reading
// it again), and versitygw's, which reads every byte it completes, copies
// them instead.
func TestCreatePricesWithTheServersProfile(t *testing.T) {
	srv, ep, cache := challengeSample(t)
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

// plan prices as create does and says with what: against a server with no
// profile kept, AWS's, saying create would measure one (and writing
// nothing); with --model measure, the server measured in --work-bucket;
// after that, the kept profile, whose plan is the layout create builds.
func TestPlanPricesAsCreateDoes(t *testing.T) {
	srv, ep, cache := challengeSample(t)
	parts := regexp.MustCompile(`(?m)^parts +(.*)$`)
	layout := func(r cliResult) string {
		if m := parts.FindStringSubmatch(r.stdout); m != nil {
			return m[1]
		}
		return ""
	}
	run := func(t *testing.T, args ...string) cliResult {
		t.Helper()
		r := s3zip(t, cache, args...)
		if r.code != 0 {
			t.Fatalf("s3zip %v: exit %d: %s", args, r.code, r.stderr)
		}
		return r
	}
	planArgs := []string{"plan", "--source", "s3://cli/chal/", "--workers", "1", ep}

	none := run(t, planArgs...)
	if !strings.Contains(none.stdout, "\non AWS ") || !strings.Contains(none.stdout, "profile         AWS's: none is kept of the S3 server at "+srv.Endpoint()) {
		t.Errorf("plan against a server with no profile kept does not say it priced for AWS, and why:\n%s", none.stdout)
	}
	if left := srv.Leftovers(t, "out"); len(left) > 0 {
		t.Errorf("plan without --model measure wrote %v", left)
	}
	if r := s3zip(t, cache, append(planArgs, "--model", "measure")...); r.code != 2 || !strings.Contains(r.stderr, "give --work-bucket B") {
		t.Errorf("plan --model measure without --work-bucket: exit %d, stderr %q; want a refusal asking for it", r.code, r.stderr)
	}
	measured := run(t, append(planArgs, "--model", "measure", "--work-bucket", "out")...)
	if !strings.Contains(measured.stdout, "\non the server ") || !strings.Contains(measured.stdout, "profile         the S3 server at "+srv.Endpoint()+" measured") {
		t.Errorf("plan --model measure does not say it priced with the measured server:\n%s", measured.stdout)
	}
	if left := srv.Leftovers(t, "out"); len(left) > 0 {
		t.Errorf("plan --model measure left %v", left)
	}
	kept := run(t, planArgs...)
	if !strings.Contains(kept.stdout, "\non the server ") || !strings.Contains(kept.stdout, "and kept in ") {
		t.Errorf("plan after a measurement does not price with the kept profile:\n%s", kept.stdout)
	}
	made := run(t, "create", "--source", "s3://cli/chal/", "--dest", "s3://out/a.zip", "--workers", "1", ep)
	if p, c := layout(kept), layout(made); p == "" || p != c {
		t.Errorf("plan's parts %q, create's %q: want the layout create builds", p, c)
	}
	t.Logf("AWS's profile: %s; the server's: %s", layout(none), layout(made))
	if p, c := layout(none), layout(made); p == c {
		t.Errorf("AWS's profile and the server's chose the same layout (%q): this test no longer shows the difference", p)
	}
	synthetic := run(t, "plan", "--synthetic", "challenge", "--count", "20")
	if !strings.Contains(synthetic.stdout, "\non AWS ") || strings.Contains(synthetic.stdout, "\nprofile ") {
		t.Errorf("plan --synthetic without an endpoint is not priced for AWS alone:\n%s", synthetic.stdout)
	}
}

// plan --model FILE prices with the file's profile and says so, with no
// endpoint and nothing measured.
func TestPlanModelFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(file, []byte(`{"model": {"WorkerBandwidth": 12e6, "CopyRate": 50e6, "CompletePerByte": 1e-9}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("S3_ENDPOINT", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	planSays(t, []string{"--synthetic", "challenge", "--count", "20", "--model", file},
		[]string{"\nby your profile ", "predicted with 8 workers (the profile below)\n", "profile         the one in " + file + " (--model)"})
}

// plan --work-bucket without --model measure is refused: plan writes
// nothing unless told to measure, so the bucket would be silently unused.
func TestPlanWorkBucketWantsMeasure(t *testing.T) {
	var out bytes.Buffer
	err := runPlan(context.Background(), []string{"--synthetic", "challenge", "--count", "20", "--work-bucket", "work"}, &out)
	if err == nil || !strings.Contains(err.Error(), "add --model measure, or drop --work-bucket") || exitCode(err) != exitRefused {
		t.Errorf("plan --work-bucket without --model measure: %v (exit %d), want a usage error naming --model measure", err, exitCode(err))
	}
}

// challengeSample is a server holding 20 challenge-sized objects under
// s3://cli/chal/ and a bucket "out", the --endpoint flag that reaches it and
// an empty profile cache (XDG_CACHE_HOME) for s3zip to run with.
func challengeSample(t *testing.T) (srv *s3test.Server, ep string, cache []string) {
	t.Helper()
	srv = cliServer(t)
	srv.CreateBucket(t, "out")
	ep = "--endpoint=" + srv.Endpoint()
	cache = []string{"XDG_CACHE_HOME=" + t.TempDir()}
	if r := s3zip(t, cache, "sample", "--dest", "s3://cli/chal/", "--count", "20", "--seed", "1", ep); r.code != 0 {
		t.Fatalf("sample: %s", r.stderr)
	}
	return srv, ep, cache
}
