package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// plainGet fetches url as a browser or curl would: net/http alone, no SDK,
// no credentials.
func plainGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	if !strings.Contains(url, "X-Amz-Signature=") {
		t.Fatalf("%q is not a presigned URL", url)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// wantDownload checks that url serves exactly want.
func wantDownload(t *testing.T, what, url string, want []byte) {
	t.Helper()
	status, got := plainGet(t, url)
	if status != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("%s link: HTTP %d, %d bytes; want 200 and the object's %d bytes byte for byte (body: %.200s)", what, status, len(got), len(want), got)
	}
}

// create --presign prints links that download the archive and its report
// byte for byte, with nothing but the URL.
func TestCreatePresignLinksDownloadArchiveAndReport(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	srv.PutObject(t, "cli", "big/a.bin", s3test.Bytes(1, 6<<20+123)) // a copied part as well as streamed ones

	r := s3zip(t, nil, "create", "--source", "s3://cli/big/", "--dest", "s3://out/linked.zip", "--presign", "1h", ep)
	expect{stdout: []string{"link        http", "report link http", "links until"}}.check(t, r)
	archive, report := srv.GetObject(t, "out", "linked.zip"), srv.GetObject(t, "out", "linked.zip.report.json")
	for _, l := range []struct {
		prefix string
		want   []byte
	}{{"link        ", archive}, {"report link ", report}} {
		for _, line := range strings.Split(r.stdout, "\n") {
			if url, ok := strings.CutPrefix(line, l.prefix); ok {
				wantDownload(t, strings.TrimSpace(l.prefix), url, l.want)
			}
		}
	}

	r = s3zip(t, nil, "create", "--source", "s3://cli/one/", "--dest", "s3://out/linked-json.zip", "--presign", "2h", "--json", ep)
	expect{}.check(t, r)
	var out struct{ Links *links }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Links == nil || out.Links.Report == nil {
		t.Fatalf("create --json --presign: links %+v (%v), want the archive's and the report's\n%s", out.Links, err, r.stdout)
	}
	wantDownload(t, "--json archive", out.Links.Archive, srv.GetObject(t, "out", "linked-json.zip"))
	wantDownload(t, "--json report", *out.Links.Report, srv.GetObject(t, "out", "linked-json.zip.report.json"))
	if left := time.Until(out.Links.Expires); left < 2*time.Hour-time.Minute || left > 2*time.Hour {
		t.Errorf("links expire %s, %s from now; want 2h", out.Links.Expires, left)
	}
}

// s3zip presign signs any object; the server honours the link until it
// expires, then refuses it.
func TestPresignLinkWorksThenExpires(t *testing.T) {
	srv := cliServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	good := srv.GetObject(t, "cli", "good.zip")

	r := s3zip(t, nil, "presign", "s3://cli/good.zip", ep)
	expect{stdoutOnly: true}.check(t, r)
	wantDownload(t, "default (1h)", strings.TrimSpace(r.stdout), good)

	r = s3zip(t, nil, "presign", "s3://cli/good.zip", "--expires", "1s", ep)
	expect{}.check(t, r)
	short := strings.TrimSpace(r.stdout)
	if !strings.Contains(short, "X-Amz-Expires=1&") && !strings.HasSuffix(short, "X-Amz-Expires=1") {
		t.Errorf("--expires 1s signed %s, want X-Amz-Expires=1", short)
	}
	time.Sleep(2500 * time.Millisecond) // past the signing second plus one
	if status, body := plainGet(t, short); status != http.StatusForbidden || !bytes.Contains(body, []byte("expired")) {
		t.Errorf("a link 2.5 s past its 1 s: HTTP %d (%.200s), want 403, expired", status, body)
	}

	r = s3zip(t, nil, "presign", "s3://cli/gone.zip", ep)
	expect{code: exitRefused, stderr: []string{"s3://cli/gone.zip does not exist"}, banned: []string{"http"}}.check(t, r)
}

// A lifetime S3 would not honour is refused before anything is done, with
// the valid range, on every command that takes one.
func TestPresignRefusesBadDuration(t *testing.T) {
	// Should a command go on regardless, it finds static credentials and a
	// dead endpoint, never the instance metadata service.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPRESIGNTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("S3_ENDPOINT", "http://127.0.0.1:1")
	commands := map[string][]string{
		"presign": {"presign", "s3://cli/good.zip", "--endpoint", "http://127.0.0.1:1", "--expires"},
		"create":  {"create", "--source", "s3://cli/one/", "--dest", "s3://out/x.zip", "--endpoint", "http://127.0.0.1:1", "--presign"},
		"status":  {"status", testExecution, "--presign"},
	}
	for _, tc := range []struct{ value, want string }{
		{"0s", "1s to 7d"}, {"500ms", "1s to 7d"}, {"-1h", "1s to 7d"}, {"8d", "1s to 7d"}, {"168h1s", "1s to 7d"},
		{"1500ms", "whole seconds"}, {"soon", "not a duration"}, {"1.5d", "not a duration"},
	} {
		for name, args := range commands {
			t.Run(name+"/"+tc.value, func(t *testing.T) {
				// The refusal comes before Step Functions is asked (were it asked, the
				// execution has succeeded and status would end there).
				f := &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(types.ExecutionStatusSucceeded, finalizerOutput, "", "")}}
				useFake(t, f)
				err := run(context.Background(), append(append([]string{}, args...), tc.value), io.Discard)
				if code := exitCode(err); code != exitRefused || err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("exit %d, %v; want %d and %q", code, err, exitRefused, tc.want)
				}
				if f.calls > 0 {
					t.Errorf("Step Functions asked %d times before the refusal", f.calls)
				}
			})
		}
	}
	for _, ok := range []string{"1s", "7d", "168h", "90m"} {
		if _, err := parseExpiry("presign", "expires", ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

// status --presign (and create --state-machine --presign) signs the
// finished execution's archive and report with the caller's credentials: the links download them, and --json carries
// them in "links" (null without --presign).
func TestStatusPresignLinks(t *testing.T) {
	srv := cliServer(t)
	srv.CreateBucket(t, "dst")
	archive, report := srv.GetObject(t, "cli", "good.zip"), []byte(`{"entries":3}`)
	srv.PutObject(t, "dst", "out.zip", archive) // finalizerOutput's archive and report
	srv.PutObject(t, "dst", "out.zip.report.json", report)
	t.Setenv("S3_ENDPOINT", srv.Endpoint())

	succeeded := func() *fakeSFN {
		return &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(types.ExecutionStatusSucceeded, finalizerOutput, "", "")}}
	}
	var stdout bytes.Buffer
	for _, args := range [][]string{
		{"status", testExecution, "--presign", "10m"},
		{"create", "--state-machine", testMachine, "--source", "s3://src/in/", "--dest", "s3://dst/out.zip", "--presign", "10m"},
	} {
		useFake(t, succeeded())
		stdout.Reset()
		if err := run(context.Background(), args, &stdout); err != nil {
			t.Fatalf("%s --presign: %v", args[0], err)
		}
		found := 0
		for _, line := range strings.Split(stdout.String(), "\n") {
			if url, ok := strings.CutPrefix(line, "link        "); ok {
				wantDownload(t, args[0]+" archive", url, archive)
				found++
			}
			if url, ok := strings.CutPrefix(line, "report link "); ok {
				wantDownload(t, args[0]+" report", url, report)
				found++
			}
		}
		if found != 2 {
			t.Errorf("%s --presign printed %d links, want 2:\n%s", args[0], found, stdout.String())
		}
	}

	for _, presign := range []bool{true, false} {
		useFake(t, succeeded())
		args := []string{"status", testExecution, "--json"}
		if presign {
			args = append(args, "--presign", "10m")
		}
		stdout.Reset()
		if err := run(context.Background(), args, &stdout); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var r executionResult
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		switch {
		case !presign && r.Links != nil:
			t.Errorf("status --json without --presign: links %+v, want null", r.Links)
		case presign && (r.Links == nil || r.Links.Report == nil):
			t.Errorf("status --json --presign: links %+v, want the archive's and the report's", r.Links)
		case presign:
			wantDownload(t, "status --json archive", r.Links.Archive, archive)
			wantDownload(t, "status --json report", *r.Links.Report, report)
		}
	}
}

// Links signed with temporary credentials die with them: the expiry
// reported is the credentials', with a warning, when that comes first.
func TestLinksExpireWithTheCredentials(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name        string
		creds       aws.Credentials
		life        time.Duration
		wantExpires time.Time
		wantWarning string
	}{
		{"static-keys", aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "s"}, 7 * 24 * time.Hour, now.Add(7 * 24 * time.Hour), ""},
		{"session-outlives-link", aws.Credentials{AccessKeyID: "ASIA", SecretAccessKey: "s", SessionToken: "t", CanExpire: true, Expires: now.Add(2 * time.Hour)},
			time.Hour, now.Add(time.Hour), ""},
		{"session-expires-first", aws.Credentials{AccessKeyID: "ASIA", SecretAccessKey: "s", SessionToken: "t", CanExpire: true, Expires: now.Add(time.Hour)},
			24 * time.Hour, now.Add(time.Hour), "temporary credentials that expire at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), UsePathStyle: true,
				Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return tc.creds, nil })})
			l, warning, err := signLinks(t.Context(), client, "s3://b/a.zip", "s3://b/a.zip.report.json", tc.life)
			if err != nil {
				t.Fatal(err)
			}
			if d := l.Expires.Sub(tc.wantExpires); d < -2*time.Second || d > 2*time.Second {
				t.Errorf("expires %s, want %s", l.Expires, tc.wantExpires.UTC())
			}
			if (tc.wantWarning == "") != (warning == "") || !strings.Contains(warning, tc.wantWarning) {
				t.Errorf("warning %q, want %q", warning, tc.wantWarning)
			}
			if l.Report == nil || !strings.Contains(l.Archive, "/b/a.zip?") || !strings.Contains(*l.Report, "/b/a.zip.report.json?") {
				t.Errorf("links %+v, want the archive's and the report's", l)
			}
		})
	}
}
