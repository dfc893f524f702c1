package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/s3zip/s3zip/create"
)

// The request this example sends is the README's (examples/start/request.json)
// and one the planner takes: decoded strictly, as the deployed planner does,
// and valid.
func TestRequestIsTheDocumentedOne(t *testing.T) {
	doc, err := os.ReadFile("../request.json")
	if err != nil {
		t.Fatal(err)
	}
	got := newRequest("order-42", "photos", "archives")
	if !reflect.DeepEqual(decodeJSON(t, got), decodeJSON(t, string(doc))) {
		t.Errorf("newRequest sends %s, want examples/start/request.json:\n%s", got, doc)
	}
	req, err := create.DecodeRequest([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Validate(); err != nil {
		t.Errorf("the planner refuses the example's request: %v", err)
	}
}

// start sends StartExecution, or with CONTROL_BUCKET the PutObject of the
// drop, to the endpoints the SDK is pointed at (here, stand-ins).
func TestStartSendsTheRequest(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	bodies := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r)
		bodies[r.Method+" "+r.URL.Path] = string(body)
		mu.Unlock()
		if r.Header.Get("X-Amz-Target") == "AWSStepFunctions.StartExecution" {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			io.WriteString(w, `{"executionArn": "the-execution", "startDate": 1764102619}`)
		}
	}))
	defer srv.Close()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_SFN": srv.URL, "AWS_ENDPOINT_URL_S3": srv.URL, "AWS_REGION": "eu-west-1",
		"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"STATE_MACHINE_ARN": "the-state-machine", "CONTROL_BUCKET": "",
	} {
		t.Setenv(k, v)
	}
	request := newRequest("order-42", "photos", "archives")
	if err := start(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	var input struct{ StateMachineArn, Input string }
	if err := json.Unmarshal([]byte(bodies["POST /"]), &input); err != nil {
		t.Fatalf("StartExecution's body %q: %v", bodies["POST /"], err)
	}
	if input.StateMachineArn != "the-state-machine" || input.Input != request {
		t.Errorf("StartExecution got %+v, want the state machine and the request", input)
	}
	t.Setenv("CONTROL_BUCKET", "the-control-bucket")
	if err := start(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	if put := bodies["PUT /the-control-bucket/requests/order-42.json"]; put != request {
		t.Errorf("the drop put %q under requests/order-42.json (requests seen %d: %v), want the request", put, len(got), keys(bodies))
	}
}

// archiveEnded reads examples/notify's events as EventBridge delivers them.
func TestArchiveEndedReadsTheEvents(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	for file, want := range map[string]string{
		"succeeded.json": "order-42: s3://archives/zips/photos-2024.zip, 20973951 bytes, CRC-32 913a7974",
		"failed.json":    "FAILED: SourceChangedError",
	} {
		doc, err := os.ReadFile(filepath.Join("..", "..", "notify", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		var event events.CloudWatchEvent
		if err := json.Unmarshal(doc, &event); err != nil {
			t.Fatal(err)
		}
		logged.Reset()
		if err := archiveEnded(context.Background(), event); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if !strings.Contains(logged.String(), want) {
			t.Errorf("%s: logged %q, want %q in it", file, logged.String(), want)
		}
	}
	if err := archiveEnded(context.Background(), events.CloudWatchEvent{Detail: json.RawMessage(`{"status": "SUCCEEDED", "output": "{\"version\": 2}"}`)}); err == nil {
		t.Error("an output of version 2 was read as version 1")
	}
}

func decodeJSON(t *testing.T, doc string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%q: %v", doc, err)
	}
	return v
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
