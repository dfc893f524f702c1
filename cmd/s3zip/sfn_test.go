package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

const (
	testMachine   = "arn:aws:states:eu-west-1:123456789012:stateMachine:S3ZipStack-Archive"
	testExecution = "arn:aws:states:eu-west-1:123456789012:execution:S3ZipStack-Archive:e1"
)

// fakeSFN is a hand-written Step Functions: StartExecution answers startErr
// or testExecution; DescribeExecution walks through describes, repeating the last.
type fakeSFN struct {
	startErr  error
	started   []string // inputs
	describes []*sfn.DescribeExecutionOutput
	calls     int
	state     string
	items     *types.MapRunItemCounts
}

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.started = append(f.started, aws.ToString(in.Input))
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String(testExecution)}, nil
}

func (f *fakeSFN) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
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
