package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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

// Off EC2, the SDK looks for credentials at the instance metadata service,
// which refuses its token, and warns "falling back to IMDSv1": the user's
// first line must be s3zip's, saying what is missing. The metadata service
// here is a loopback server that answers as one that refuses tokens.
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
