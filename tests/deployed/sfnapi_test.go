package deployed_test

// A sliver of the Step Functions API (JSON 1.0 protocol) in front of the
// deployed definition, so that the CLI's `create --state-machine` and
// `status` run against the real state machine here: StartExecution runs an
// execution with execute.ts in the background; DescribeExecution reports it;
// GetExecutionHistory and ListMapRuns answer empty (the local engine keeps no
// history or Map Runs to report).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type sfnExecution struct {
	arn, input string
	start      time.Time
	done       chan struct{}
	out        *Outcome
	err        error
	stop       time.Time
}

func (d *Deployment) serveStepFunctions(w http.ResponseWriter, op string, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fail := func(status int, typ, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	var in struct {
		StateMachineArn, ExecutionArn, Name, Input string
	}
	_ = json.Unmarshal(body, &in)
	switch op {
	case "StartExecution":
		if in.StateMachineArn != d.Machine.Arn {
			fail(400, "StateMachineDoesNotExist", "State Machine Does Not Exist: '"+in.StateMachineArn+"'")
			return
		}
		if in.Name == "" {
			in.Name = fmt.Sprintf("cli-%d", time.Now().UnixNano())
		}
		arn := strings.Replace(d.Machine.Arn, ":stateMachine:", ":execution:", 1) + ":" + in.Name
		e := &sfnExecution{arn: arn, input: in.Input, start: time.Now(), done: make(chan struct{})}
		d.mu.Lock()
		if d.executions == nil {
			d.executions = map[string]*sfnExecution{}
		}
		d.executions[arn] = e
		d.mu.Unlock()
		go func() {
			e.out, e.err = d.run(context.Background(), in.Name, []byte(in.Input), nil)
			e.stop = time.Now()
			close(e.done)
		}()
		_ = json.NewEncoder(w).Encode(map[string]any{"executionArn": arn, "startDate": float64(e.start.UnixMilli()) / 1000})
	case "DescribeExecution":
		d.mu.Lock()
		e := d.executions[in.ExecutionArn]
		d.mu.Unlock()
		if e == nil {
			fail(400, "ExecutionDoesNotExist", "Execution Does Not Exist: '"+in.ExecutionArn+"'")
			return
		}
		resp := map[string]any{"executionArn": e.arn, "stateMachineArn": d.Machine.Arn, "input": e.input,
			"startDate": float64(e.start.UnixMilli()) / 1000, "status": "RUNNING"}
		select {
		case <-e.done:
			resp["stopDate"] = float64(e.stop.UnixMilli()) / 1000
			switch {
			case e.err != nil:
				resp["status"], resp["error"], resp["cause"] = "FAILED", "States.Runtime", e.err.Error()
			case e.out.Status == "SUCCEEDED":
				resp["status"], resp["output"] = "SUCCEEDED", string(e.out.Output)
			default:
				resp["status"], resp["error"], resp["cause"] = e.out.Status, e.out.Error, e.out.Cause
			}
		default:
		}
		_ = json.NewEncoder(w).Encode(resp)
	case "GetExecutionHistory":
		_ = json.NewEncoder(w).Encode(map[string]any{"events": []any{}})
	case "ListMapRuns":
		_ = json.NewEncoder(w).Encode(map[string]any{"mapRuns": []any{}})
	default:
		fail(400, "UnknownOperationException", op+" is not served by the test harness")
	}
}

// The CLI drives the deployed workflow: `s3zip create --state-machine` starts
// an execution through the Step Functions API and follows it to the summary;
// a request the planner refuses exits 2. The account answers GetAccountSettings
// with a new account's 10, so the CLI runs the first execution with 10 workers.
func TestCLICreatesOnTheStateMachine(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	want := sources(d)
	bin := filepath.Join(t.TempDir(), "s3zip")
	build := exec.Command("go", "build", "-o", bin, "./cmd/s3zip")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/s3zip: %v\n%s", err, out)
	}
	cli := func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL_SFN="+d.api, "AWS_ENDPOINT_URL_LAMBDA="+d.api, "AWS_ACCESS_KEY_ID=cli", "AWS_SECRET_ACCESS_KEY=cli", "AWS_REGION="+region)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	key := destinationPrefix + "cli.zip"
	out, code := cli("create", "--state-machine", d.Machine.Arn, "--source", "s3://"+sourceBucket+"/"+sourcePrefix, "--dest", "s3://"+destinationBucket+"/"+key, "--strategy", "duo")
	if code != 0 || !strings.Contains(out, "archive     s3://"+destinationBucket+"/"+key) {
		t.Fatalf("s3zip create --state-machine: exit %d\n%s", code, out)
	}
	// The account's concurrency (GetAccountSettings) is below the deployment's default of 100.
	if want := fmt.Sprintf("running with --workers %d", newAccountConcurrency); !strings.Contains(out, want) {
		t.Errorf("s3zip create --state-machine in an account of %d: no %q\n%s", newAccountConcurrency, want, out)
	}
	d.checkArchive(key, want)
	out, code = cli("create", "--state-machine", d.Machine.Arn, "--source", "s3://"+sourceBucket+"/"+sourcePrefix, "--dest", "s3://"+destinationBucket+"/"+key)
	if code != 2 || !strings.Contains(out, "DestinationExistsError") {
		t.Errorf("a second create on the same key: exit %d, want 2 with DestinationExistsError\n%s", code, out)
	}
	d.assertClean()
}
