package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
)

const (
	testMachine   = "arn:aws:states:eu-west-1:123456789012:stateMachine:S3ZipStack-Archive"
	testExecution = "arn:aws:states:eu-west-1:123456789012:execution:S3ZipStack-Archive:e1"
)

// fakeSFN is a hand-written Step Functions: StartExecution answers startErr
// or testExecution; DescribeExecution walks through describes, repeating the last.
type fakeSFN struct {
	startErr    error
	describeErr error
	started     []string // inputs
	describes   []*sfn.DescribeExecutionOutput
	calls       int
	state       string
	items       *types.MapRunItemCounts
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.started = append(f.started, aws.ToString(in.Input))
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String(testExecution)}, nil
}

func (f *fakeSFN) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	if f.describeErr != nil {
		return nil, f.describeErr
	}
	if aws.ToString(in.ExecutionArn) != testExecution {
		return nil, &types.ExecutionDoesNotExist{Message: aws.String("Execution Does Not Exist: " + aws.ToString(in.ExecutionArn))}
	}
	d := f.describes[min(f.calls, len(f.describes)-1)]
	f.calls++
	return d, nil
}

func (f *fakeSFN) GetExecutionHistory(context.Context, *sfn.GetExecutionHistoryInput, ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error) {
	return &sfn.GetExecutionHistoryOutput{Events: []types.HistoryEvent{
		{Type: types.HistoryEventTypeMapRunStarted},
		{Type: types.HistoryEventTypeMapStateEntered, StateEnteredEventDetails: &types.StateEnteredEventDetails{Name: aws.String(f.state)}},
	}}, nil
}

func (f *fakeSFN) ListMapRuns(context.Context, *sfn.ListMapRunsInput, ...func(*sfn.Options)) (*sfn.ListMapRunsOutput, error) {
	if f.items == nil {
		return &sfn.ListMapRunsOutput{}, nil
	}
	return &sfn.ListMapRunsOutput{MapRuns: []types.MapRunListItem{{MapRunArn: aws.String("run1"), StartDate: aws.Time(time.Unix(1, 0))}}}, nil
}

func (f *fakeSFN) DescribeMapRun(context.Context, *sfn.DescribeMapRunInput, ...func(*sfn.Options)) (*sfn.DescribeMapRunOutput, error) {
	return &sfn.DescribeMapRunOutput{ItemCounts: f.items}, nil
}

func running() *sfn.DescribeExecutionOutput {
	return &sfn.DescribeExecutionOutput{ExecutionArn: aws.String(testExecution), Status: types.ExecutionStatusRunning}
}

func ended(status types.ExecutionStatus, output, errName, cause string) *sfn.DescribeExecutionOutput {
	d := &sfn.DescribeExecutionOutput{ExecutionArn: aws.String(testExecution), Status: status,
		StartDate: aws.Time(time.Unix(100, 0)), StopDate: aws.Time(time.Unix(112, 0))}
	if output != "" {
		d.Output = aws.String(output)
	}
	if errName != "" {
		d.Error, d.Cause = aws.String(errName), aws.String(cause)
	}
	return d
}

func useFake(t *testing.T, f *fakeSFN) *bytes.Buffer {
	t.Helper()
	oldNew, oldPoll, oldErr := newStepFunctions, pollInterval, stderrWriter
	var stderr bytes.Buffer
	newStepFunctions = func(context.Context, string) (stepFunctions, error) { return f, nil }
	pollInterval, stderrWriter = time.Millisecond, &stderr
	t.Cleanup(func() { newStepFunctions, pollInterval, stderrWriter = oldNew, oldPoll, oldErr })
	useAccount(t, &fakeLambdaAccount{unreserved: aws.Int32(1000)}) // never the real Lambda API
	return &stderr
}

const finalizerOutput = `{"archive":{"uri":"s3://dst/out.zip","size":16778915,"etag":"\"e\"","crc32":"c595ed28"},"report":"s3://dst/out.zip.report.json","stats":{"entries":5,"parts":3,"streamedBytesActual":9438883,"copiedBytesActual":7340032}}`

func TestCreateOnStateMachine(t *testing.T) {
	args := []string{"create", "--state-machine", testMachine, "--source", "s3://src/in/", "--dest", "s3://dst/out.zip", "--strategy", "duo"}
	for _, tc := range []struct {
		name      string
		fake      *fakeSFN
		args      []string
		wantCode  int
		wantOut   []string // in stdout
		wantErr   []string // in the returned error
		wantStart int
	}{
		{
			name: "succeeds with progress and summary",
			fake: &fakeSFN{state: "BuildParts", items: &types.MapRunItemCounts{Succeeded: 3, Total: 8},
				describes: []*sfn.DescribeExecutionOutput{running(), running(), ended(types.ExecutionStatusSucceeded, finalizerOutput, "", "")}},
			wantOut:   []string{"archive     s3://dst/out.zip", "entries     5", "CRC-32 c595ed28", "wall time   12.0 s"},
			wantStart: 1,
		},
		{
			name: "execution fails",
			fake: &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(types.ExecutionStatusFailed, "", "SourceChangedError",
				`{"errorMessage":"source s3://src/in/a changed after planning","errorType":"SourceChangedError"}`)}},
			wantCode:  exitFailed,
			wantErr:   []string{"FAILED", "SourceChangedError", "source s3://src/in/a changed after planning"},
			wantStart: 1,
		},
		{
			name: "the planner refuses the request",
			fake: &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(types.ExecutionStatusFailed, "", "DestinationExistsError",
				`{"errorMessage":"destination s3://dst/out.zip already exists; set options.overwrite to replace it","errorType":"DestinationExistsError"}`)}},
			wantCode:  exitRefused,
			wantErr:   []string{"DestinationExistsError", "already exists"},
			wantStart: 1,
		},
		{
			name:     "Step Functions refuses StartExecution",
			fake:     &fakeSFN{startErr: &types.StateMachineDoesNotExist{Message: aws.String("State Machine Does Not Exist")}},
			wantCode: exitRefused,
			wantErr:  []string{"StartExecution", "refused", "State Machine Does Not Exist"},
		},
		{
			name:     "not a state machine ARN",
			fake:     &fakeSFN{},
			args:     []string{"create", "--state-machine", "S3ZipStack-Archive", "--source", "s3://src/in/", "--dest", "s3://dst/out.zip"},
			wantCode: exitRefused,
			wantErr:  []string{"not a state machine ARN"},
		},
		{
			name:     "status of an unknown execution",
			fake:     &fakeSFN{},
			args:     []string{"status", strings.Replace(testExecution, ":e1", ":nope", 1)},
			wantCode: exitRefused,
			wantErr:  []string{"does not exist"},
		},
		{
			name: "status follows a running execution",
			fake: &fakeSFN{state: "FinalizeArchive",
				describes: []*sfn.DescribeExecutionOutput{running(), ended(types.ExecutionStatusSucceeded, finalizerOutput, "", "")}},
			args:    []string{"status", testExecution},
			wantOut: []string{"archive     s3://dst/out.zip"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := useFake(t, tc.fake)
			a := args
			if tc.args != nil {
				a = tc.args
			}
			var stdout bytes.Buffer
			err := run(context.Background(), a, &stdout)
			if got := exitCode(err); got != tc.wantCode {
				t.Fatalf("exit code %d (err %v), want %d", got, err, tc.wantCode)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
			if len(tc.fake.started) != tc.wantStart {
				t.Fatalf("%d executions started, want %d", len(tc.fake.started), tc.wantStart)
			}
			if tc.wantStart == 1 {
				var in map[string]any
				if err := json.Unmarshal([]byte(tc.fake.started[0]), &in); err != nil {
					t.Fatalf("execution input %s: %v", tc.fake.started[0], err)
				}
				if src := in["source"].(map[string]any); src["bucket"] != "src" || src["prefix"] != "in/" {
					t.Errorf("execution input source = %v", src)
				}
				if dst := in["destination"].(map[string]any); dst["bucket"] != "dst" || dst["key"] != "out.zip" {
					t.Errorf("execution input destination = %v", dst)
				}
				if mc, ok := in["options"].(map[string]any)["maxConcurrency"]; ok {
					t.Errorf("maxConcurrency %v sent without --workers: the deployment's default must apply", mc)
				}
			}
			if tc.fake.items != nil && !strings.Contains(stderr.String(), "RUNNING BuildParts, parts 3/8 succeeded, 0 failed") {
				t.Errorf("progress lines:\n%s", stderr.String())
			}
		})
	}
}

// Step Functions not reached (no endpoint, no credentials it takes,
// throttled) is exit 3 and says what to fix; only an answer that judges the
// request itself is a refusal (exit 2).
func TestStateMachineNotReachedIsNotRefused(t *testing.T) {
	apiErr := func(code, msg string) error {
		return &smithy.OperationError{ServiceID: "SFN", OperationName: "StartExecution", Err: &smithy.GenericAPIError{Code: code, Message: msg}}
	}
	start := []string{"create", "--state-machine", testMachine, "--source", "s3://src/in/", "--dest", "s3://dst/out.zip"}
	for _, tc := range []struct {
		name     string
		fake     *fakeSFN
		args     []string
		wantCode int
		wantErr  []string
	}{
		{"no endpoint", &fakeSFN{startErr: &smithy.OperationError{ServiceID: "SFN", OperationName: "StartExecution",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}},
			start, exitUnreachable, []string{"cannot reach Step Functions", "connection refused", "nothing was started"}},
		{"credentials not taken", &fakeSFN{startErr: apiErr("UnrecognizedClientException", "The security token included in the request is invalid.")},
			start, exitUnreachable, []string{"did not accept the credentials", "UnrecognizedClientException", "AWS_PROFILE"}},
		{"throttled", &fakeSFN{startErr: apiErr("ThrottlingException", "Rate exceeded")},
			start, exitUnreachable, []string{"ThrottlingException", "throttled", "nothing was started"}},
		{"state machine does not exist", &fakeSFN{startErr: &types.StateMachineDoesNotExist{Message: aws.String("State Machine Does Not Exist")}},
			start, exitRefused, []string{"StartExecution", "refused", "State Machine Does Not Exist"}},
		{"lost while following", &fakeSFN{describeErr: &smithy.OperationError{ServiceID: "SFN", OperationName: "DescribeExecution",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: network is unreachable")}}},
			[]string{"status", testExecution}, exitUnreachable, []string{"cannot reach Step Functions", "s3zip status " + testExecution}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useFake(t, tc.fake)
			err := run(context.Background(), tc.args, io.Discard)
			if got := exitCode(err); got != tc.wantCode {
				t.Errorf("exit code %d (err %v), want %d", got, err, tc.wantCode)
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
		})
	}
}

// statusFields are status --json's fields in their order, as docs/cli.md's
// schema lists them.
var statusFields = []string{"execution", "status", "exitCode", "archive", "report", "stats", "warnings", "error", "cause", "started", "stopped", "links", "archives"}

// status --json prints the same fields in the same order whatever the
// outcome (null where one does not apply), and docs/cli.md documents each.
func TestStatusJSONSchema(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	schema := regexp.MustCompile("(?s)status --json.*?```json\n(.*?)```").FindSubmatch(doc)
	if schema == nil {
		t.Fatal("docs/cli.md has no ```json block after \"status --json\"")
	}
	if got := topLevelKeys(t, schema[1]); !slices.Equal(got, statusFields) {
		t.Errorf("docs/cli.md's status --json schema lists %v, want %v", got, statusFields)
	}
	for _, tc := range []struct {
		name     string
		describe *sfn.DescribeExecutionOutput
		wantCode int
		want     map[string]string // field → JSON value
	}{
		{"succeeded", ended(types.ExecutionStatusSucceeded, finalizerOutput, "", ""), 0,
			map[string]string{"status": `"SUCCEEDED"`, "exitCode": "0", "report": `"s3://dst/out.zip.report.json"`, "warnings": "[]", "error": "null", "cause": "null"}},
		{"failed", ended(types.ExecutionStatusFailed, "", "SourceChangedError", `{"errorMessage":"source s3://src/in/a changed"}`), exitFailed,
			map[string]string{"status": `"FAILED"`, "exitCode": "1", "archive": "null", "report": "null", "stats": "null", "error": `"SourceChangedError"`, "cause": `"source s3://src/in/a changed"`}},
		{"refused", ended(types.ExecutionStatusFailed, "", "RequestError", `{"errorMessage":"bad request: no objects"}`), exitRefused,
			map[string]string{"exitCode": "2", "error": `"RequestError"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useFake(t, &fakeSFN{describes: []*sfn.DescribeExecutionOutput{tc.describe}})
			var stdout bytes.Buffer
			err := run(context.Background(), []string{"status", "--json", testExecution}, &stdout)
			if got := exitCode(err); got != tc.wantCode {
				t.Errorf("exit code %d (err %v), want %d", got, err, tc.wantCode)
			}
			if got := topLevelKeys(t, stdout.Bytes()); !slices.Equal(got, statusFields) {
				t.Errorf("fields %v, want %v", got, statusFields)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(stdout.Bytes(), &fields); err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := string(fields[k]); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
		})
	}
}

// topLevelKeys are a JSON object's keys in the order they are written.
func topLevelKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %v %v\n%s", tok, err, doc)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
	}
	return keys
}

// A run whose report could not be written succeeded: exit 0, the archive's
// summary, and the warning on stderr (status --json: in "warnings", with
// "report" null).
func TestSucceededWithWarning(t *testing.T) {
	const withWarning = `{"archive":{"uri":"s3://dst/out.zip","size":16778915,"etag":"\"e\"","crc32":"c595ed28"},"report":"","stats":{"entries":5,"parts":3},` +
		`"warnings":["the archive s3://dst/out.zip is complete and checked, but its report s3://dst/out.zip.report.json was not written: 409 ConditionalRequestConflict"]}`
	for _, asJSON := range []bool{false, true} {
		stderr := useFake(t, &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(types.ExecutionStatusSucceeded, withWarning, "", "")}})
		args := []string{"status", testExecution}
		if asJSON {
			args = append(args, "--json")
		}
		var stdout bytes.Buffer
		err := run(context.Background(), args, &stdout)
		if code := exitCode(err); code != 0 {
			t.Fatalf("json %v: exit %d (%v), want 0", asJSON, code, err)
		}
		if !asJSON {
			if !strings.Contains(stderr.String(), "s3zip: warning: the archive s3://dst/out.zip is complete") {
				t.Errorf("stderr lacks the warning:\n%s", stderr.String())
			}
			if !strings.Contains(stdout.String(), "archive     s3://dst/out.zip") || !strings.Contains(stdout.String(), "report      not written") {
				t.Errorf("summary:\n%s", stdout.String())
			}
			continue
		}
		var r executionResult
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Report != nil || len(r.Warnings) != 1 || r.Archive == nil {
			t.Errorf("report %v, warnings %q, archive %v; want null, the warning, the archive", r.Report, r.Warnings, r.Archive)
		}
	}
}

// A run whose request asked for links (options.presign) shows the links
// its output carries, in the summary and in status --json; --presign signs
// new ones as the caller instead.
func TestStatusShowsTheOutputsLinks(t *testing.T) {
	const withLinks = `{"version":1,"requestId":"order-42","execution":"x","archive":{"uri":"s3://dst/out.zip","size":16778915,"etag":"\"e\"","crc32":"c595ed28"},` +
		`"report":"s3://dst/out.zip.report.json","entries":5,"parts":3,"strategy":"duo","seconds":4.2,` +
		`"links":{"archive":"https://dst.example/out.zip?X-Amz-Signature=a","report":"https://dst.example/out.zip.report.json?X-Amz-Signature=b","expires":"2026-11-26T20:30:23Z"},` +
		`"stats":{"entries":5,"parts":3}}`
	for _, asJSON := range []bool{false, true} {
		useFake(t, &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(types.ExecutionStatusSucceeded, withLinks, "", "")}})
		args := []string{"status", testExecution}
		if asJSON {
			args = append(args, "--json")
		}
		var stdout bytes.Buffer
		if err := run(context.Background(), args, &stdout); err != nil {
			t.Fatal(err)
		}
		if !asJSON {
			if !strings.Contains(stdout.String(), "link        https://dst.example/out.zip?X-Amz-Signature=a") || !strings.Contains(stdout.String(), "links until 2026-11-26T20:30:23Z") {
				t.Errorf("summary lacks the output's links:\n%s", stdout.String())
			}
			continue
		}
		var r executionResult
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Links == nil || r.Links.Archive != "https://dst.example/out.zip?X-Amz-Signature=a" || r.Links.Report == nil {
			t.Errorf("links %+v; want the output's", r.Links)
		}
	}
}

// An execution that failed for a cause a retry may mend was kept by the
// state machine: status says how to redrive it; one that was aborted (a
// refusal) or cannot be redriven does not.
func TestStatusSaysHowToRedrive(t *testing.T) {
	for _, c := range []struct {
		errName string
		redrive types.ExecutionRedriveStatus
		hint    bool
	}{
		{"States.ExceedToleratedFailureThreshold", types.ExecutionRedriveStatusRedrivable, true},
		{"TransientError", types.ExecutionRedriveStatusRedrivable, true},
		{"Lambda.ServiceException", "", true},
		{"SourceChangedError", types.ExecutionRedriveStatusRedrivable, false},
		{"RequestError", types.ExecutionRedriveStatusRedrivable, false},
		{"TransientError", types.ExecutionRedriveStatusNotRedrivable, false},
	} {
		d := ended(types.ExecutionStatusFailed, "", c.errName, `{"errorMessage":"x"}`)
		d.RedriveStatus = c.redrive
		hint := redriveHint(d, c.errName)
		if (hint != "") != c.hint || c.hint && !strings.Contains(hint, "aws stepfunctions redrive-execution --execution-arn "+testExecution) {
			t.Errorf("%s (%s): hint %q, want one: %v", c.errName, c.redrive, hint, c.hint)
		}
	}
}
