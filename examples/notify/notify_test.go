package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/outputschema"
)

func event(t *testing.T, name string) Event {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(doc, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// The fixture's output is a contract-valid one, so the consumer is tested
// against what the state machine gives (tests/asl and tests/deployed check
// the real output against the same schema).
func TestFixtureOutputIsTheContract(t *testing.T) {
	if err := outputschema.Validate([]byte(event(t, "succeeded.json").Detail.Output)); err != nil {
		t.Fatal(err)
	}
}

// Each event reaches the webhook as the notice the application needs.
func TestHandlePostsNotices(t *testing.T) {
	var got []Notice
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n Notice
		if err := json.Unmarshal(body, &n); err != nil || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook got %q (%s): %v", body, r.Header.Get("Content-Type"), err)
		}
		got = append(got, n)
	}))
	defer hook.Close()
	for _, tc := range []struct {
		file string
		want Notice
	}{
		{"succeeded.json", Notice{RequestID: "order-42", Status: "SUCCEEDED", Archive: "s3://archives/zips/photos-2024.zip", Size: 20973951, Entries: 6, Seconds: 4.218, Expires: "2026-11-26T20:30:23Z"}},
		// Started from a request object: no id in the input, so the execution's name.
		{"failed.json", Notice{RequestID: "b1c2", Status: "FAILED", Error: "SourceChangedError"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ev := event(t, tc.file)
			got = nil
			if err := Handle(t.Context(), hook.Client(), hook.URL, ev); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("webhook called %d times, want 1", len(got))
			}
			n := got[0]
			if n.Execution != ev.Detail.ExecutionArn {
				t.Errorf("execution %q, want %q", n.Execution, ev.Detail.ExecutionArn)
			}
			if tc.want.Status == "SUCCEEDED" && !strings.Contains(n.Link, "X-Amz-Signature=") || tc.want.Status == "FAILED" && !strings.Contains(n.Cause, "changed since planning") {
				t.Errorf("link %q, cause %q", n.Link, n.Cause)
			}
			n.Execution, n.Link, n.Cause, n.Warnings = "", "", "", nil
			if !reflect.DeepEqual(n, tc.want) {
				t.Errorf("notice %+v\nwant   %+v", n, tc.want)
			}
		})
	}
}

// What it cannot read is an error (Lambda retries, then the event goes to
// the rule's dead-letter queue), never a wrong notice.
func TestNoticeRefusesWhatItCannotRead(t *testing.T) {
	newer := event(t, "succeeded.json")
	newer.Detail.Output = strings.Replace(newer.Detail.Output, `"version": 1`, `"version": 2`, 1)
	omitted := event(t, "succeeded.json")
	omitted.Detail.Output = ""
	other := event(t, "failed.json")
	other.DetailType = "Object Created"
	for name, tc := range map[string]struct {
		ev   Event
		want string
	}{
		"newer-version":  {newer, "output version 2; this consumer reads version 1"},
		"output-omitted": {omitted, "read it with DescribeExecution"},
		"not-a-status":   {other, "not a Step Functions execution status change"},
	} {
		if _, err := NoticeOf(tc.ev); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
