package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What the SDK and the flag package print when nothing catches them first:
// no command may show them.
var rawErrors = []string{"operation error", "StatusCode:", "RequestID", "https response error", "Usage of", "  -workers int", "PrintDefaults"}

// Every command's mistakes are one line that says what failed, on what,
// and what to do, with the exit status README gives the kind of failure:
// 2 refused (the command line or the request), 3 not reached (endpoint,
// credentials), never the whole usage or the SDK's layers.
func TestEveryCommandFailsInOneLine(t *testing.T) {
	srv := newUserServer(t)
	srv.PutObject(t, "cli", "in.zip", storedZip(t, map[string]string{"a.txt": "alpha"}))
	srv.PutObject(t, "cli", "truncated.zip", storedZip(t, map[string]string{"a.txt": "alpha"})[:40])
	srv.PutObject(t, "cli", "notes.txt", []byte("not a zip at all, though long enough to hold an end record"))
	ep := "--endpoint=" + srv.Endpoint()
	taken := t.TempDir()
	if err := os.WriteFile(filepath.Join(taken, "a.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := "--endpoint=http://127.0.0.1:1"
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		// mistyped flags and argument counts
		{"extract-flag-typo", []string{"extract", "s3://cli/in.zip", "s3://out/x/", "--wrokers", "2", ep},
			expect{code: exitRefused, stderr: []string{"extract:", "-wrokers", "did you mean --workers?"}}},
		{"extract-one-argument", []string{"extract", "s3://cli/in.zip", ep},
			expect{code: exitRefused, stderr: []string{"extract: missing s3://BUCKET/PREFIX/"}}},
		{"extract-three-arguments", []string{"extract", "s3://cli/in.zip", "s3://out/x/", "s3://out/y/", ep},
			expect{code: exitRefused, stderr: []string{`extract: unexpected argument "s3://out/y/"`}}},
		{"status-flag-typo", []string{"status", "--jsno", "arn:aws:states:eu-west-1:1:execution:m:e"},
			expect{code: exitRefused, stderr: []string{"status:", "did you mean --json?"}}},
		{"status-no-argument", []string{"status"},
			expect{code: exitRefused, stderr: []string{"status: missing EXECUTION_ARN"}}},
		{"status-two-arguments", []string{"status", "arn:aws:states:eu-west-1:1:execution:m:e", "more"},
			expect{code: exitRefused, stderr: []string{`status: unexpected argument "more"`}}},
		// what the request names does not exist: refused, before any write
		{"extract-missing-archive", []string{"extract", "s3://cli/nope.zip", "s3://out/x/", ep},
			expect{code: exitRefused, stderr: []string{"archive s3://cli/nope.zip does not exist"}}},
		{"extract-missing-archive-bucket", []string{"extract", "s3://nobucket/in.zip", "s3://out/x/", ep},
			expect{code: exitRefused, stderr: []string{`archive bucket "nobucket" does not exist`}}},
		{"extract-missing-destination-bucket", []string{"extract", "s3://cli/in.zip", "s3://nodest/x/", ep},
			expect{code: exitRefused, stderr: []string{`destination bucket "nodest" does not exist`}}},
		{"create-missing-destination-bucket", []string{"create", "--source", "s3://cli/small/", "--dest", "s3://nodest/a.zip", ep},
			expect{code: exitRefused, stderr: []string{`destination bucket "nodest" does not exist`}}},
		{"create-destination-exists", []string{"create", "--source", "s3://cli/small/", "--dest", "s3://cli/taken.zip", ep},
			expect{code: exitRefused, stderr: []string{"add --overwrite to replace it"}}},
		// what is there refuses the command before it writes (issue 35, rough edge 6)
		{"get-onto-an-existing-file", []string{"get", "s3://cli/in.zip", taken, ep},
			expect{code: exitRefused, stderr: []string{`entry "a.txt": file already exists in ` + taken + "; add --overwrite"}, banned: []string{"use overwrite"}}},
		{"extract-truncated-archive", []string{"extract", "s3://cli/truncated.zip", "s3://out/t/", ep},
			expect{code: exitRefused, stderr: []string{"s3://cli/truncated.zip is not a readable ZIP archive", "nothing was written"}}},
		{"extract-not-a-zip", []string{"extract", "s3://cli/notes.txt", "s3://out/n/", ep},
			expect{code: exitRefused, stderr: []string{"s3://cli/notes.txt is not a readable ZIP archive", "nothing was written"}}},
		// S3 not reached: exit 3, whatever the command
		{"extract-dead-endpoint", []string{"extract", "s3://cli/in.zip", "s3://out/x/", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"get-dead-endpoint", []string{"get", "s3://cli/in.zip", t.TempDir(), dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"verify-dead-endpoint", []string{"verify", "s3://cli/in.zip", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"cleanup-dead-endpoint", []string{"cleanup", "s3://cli/in.zip", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"create-dead-endpoint", []string{"create", "--source", "s3://cli/small/", "--dest", "s3://out/a.zip", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.stderrMax, tc.want.banned = 1, append(tc.want.banned, rawErrors...)
			tc.want.check(t, s3zip(t, nil, tc.args...))
		})
	}
}

// Missing credentials are found before the first request, by every command
// that makes one: the endpoint here refuses connections, so a command that
// asked it anything would say so instead.
func TestMissingCredentialsBeforeAnyRequest(t *testing.T) {
	none := t.TempDir() + "/none"
	env := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none, "AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
		"AWS_WEB_IDENTITY_TOKEN_FILE=", "AWS_REGION=eu-west-1",
		// Nothing may leave loopback: Step Functions too is pointed at the dead port.
		"S3_ENDPOINT=http://127.0.0.1:1", "AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_ENDPOINT_URL_SFN=http://127.0.0.1:1"}
	machine := "arn:aws:states:eu-west-1:123456789012:stateMachine:m"
	for _, args := range [][]string{
		{"create", "--source", "s3://cli/small/", "--dest", "s3://out/a.zip"},
		{"create", "--state-machine", machine, "--source", "s3://cli/small/", "--dest", "s3://out/a.zip"},
		{"status", "arn:aws:states:eu-west-1:123456789012:execution:m:e1"},
		{"plan", "--source", "s3://cli/small/"},
		{"extract", "s3://cli/in.zip", "s3://out/x/"},
		{"get", "s3://cli/in.zip", t.TempDir()},
		{"verify", "s3://cli/in.zip"},
		{"cleanup", "s3://cli/in.zip"},
		{"presign", "s3://cli/in.zip"},
		{"sample", "--dest", "s3://cli/s/", "--count", "1"},
	} {
		t.Run(args[0]+map[bool]string{true: "-state-machine"}[strings.Contains(strings.Join(args, " "), "--state-machine")], func(t *testing.T) {
			expect{code: exitUnreachable, stderr: []string{"no AWS credentials", "AWS_ACCESS_KEY_ID"}, stderrMax: 1,
				banned: append([]string{"connection refused", "127.0.0.1:1"}, rawErrors...)}.check(t, s3zip(t, env, args...))
		})
	}
}

// A value typed is honoured or refused with its range, never replaced by
// the default that an absent flag gets.
func TestTypedValuesAreNotDefaults(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	src := []string{"create", "--source", "s3://cli/small/", "--dest", "s3://out/typed.zip", ep}
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"empty-state-machine", append(src, "--state-machine", ""),
			expect{code: exitRefused, stderr: []string{"--state-machine is given but empty"}}},
		{"empty-state-machine-equals", append(src, "--state-machine="),
			expect{code: exitRefused, stderr: []string{"--state-machine is given but empty"}}},
		{"empty-endpoint", []string{"verify", "s3://cli/taken.zip", "--endpoint", ""},
			expect{code: exitRefused, stderr: []string{"--endpoint is given but empty"}}},
		{"level-0", append(src, "--compress", "deflate", "--level", "0"),
			expect{code: exitRefused, stderr: []string{"--level 0: want 1 (fastest) to 9 (smallest)"}}},
		{"part-size-0", append(src, "--part-size", "0"),
			expect{code: exitRefused, stderr: []string{"--part-size 0: want 5MiB to 5GiB (5242880 to 5368709120 bytes)"}}},
		{"plan-level-0", []string{"plan", "--source", "s3://cli/small/", "--compress", "auto", "--level", "0", ep},
			expect{code: exitRefused, stderr: []string{"--level 0: want 1"}}},
		{"extract-negative-small-stored", []string{"extract", "s3://cli/taken.zip", "s3://out/x/", "--small-stored", "-5", ep},
			expect{code: exitRefused, stderr: []string{"--small-stored -5: want 0 or more bytes"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.stderrMax = 1
			tc.want.check(t, s3zip(t, nil, tc.args...))
		})
	}
	if left := srv.Leftovers(t, "out", "out"); len(left) > 0 {
		t.Errorf("refused runs left behind: %v", left)
	}
}

// docs/cli.md's exit status table names every code the commands use, with the
// meaning cli.go gives it.
func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for code, meaning := range map[int]string{0: "done", exitFailed: "failed", exitRefused: "refused", exitUnreachable: "could not reach"} {
		re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(strings.TrimSpace(string(rune('0'+code)))) + ` +\| ` + regexp.QuoteMeta(meaning))
		if !re.Match(doc) {
			t.Errorf("docs/cli.md's exit status table has no row %q for %d", meaning, code)
		}
	}
}

// Off EC2, the SDK looks for credentials at the instance metadata service,
// which refuses its token, and warns "falling back to IMDSv1": the user's
// first line must be s3zip's, saying what is missing (issue 35, rough
// edge 5). The metadata service here is a loopback server that answers as
// one that refuses tokens.
func TestNoSDKWarningBeforeTheCredentialsLine(t *testing.T) {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer imds.Close()
	none := t.TempDir() + "/none"
	env := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.URL, "AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none,
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=", "AWS_WEB_IDENTITY_TOKEN_FILE=", "AWS_REGION=eu-west-1",
		"S3_ENDPOINT=http://127.0.0.1:1"}
	r := s3zip(t, env, "create", "--source", "s3://cli/small/", "--dest", "s3://out/a.zip")
	expect{code: exitUnreachable, stderr: []string{"no AWS credentials"}, stderrMax: 1, banned: []string{"WARN", "IMDSv1"}}.check(t, r)
	if !strings.HasPrefix(r.stderr, "s3zip: ") {
		t.Errorf("stderr begins %.80q, want s3zip's own line first", r.stderr)
	}
}
