package main

// Driving the deployed workflow: `create --state-machine ARN` starts an
// execution with the request the flags describe; `status EXECUTION_ARN`
// follows one. Both print the current state and the Distributed Map's
// progress while it runs, then the finalizer's summary or the execution's
// error and cause. Exit codes: 0 archive created, 1 execution failed,
// 2 request refused (by Step Functions, or by the planner before anything
// was written).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/s3zip/s3zip/workflow"
)

func init() {
	register(command{name: "status", usage: "follow an execution of the deployed workflow: status EXECUTION_ARN", run: runStatus})
}

// Exit codes of create --state-machine and status.
const (
	exitFailed  = 1
	exitRefused = 2
)

// exitError carries the process exit code for main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

// stepFunctions is what following an execution needs of the Step Functions API.
type stepFunctions interface {
	StartExecution(context.Context, *sfn.StartExecutionInput, ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	DescribeExecution(context.Context, *sfn.DescribeExecutionInput, ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
	GetExecutionHistory(context.Context, *sfn.GetExecutionHistoryInput, ...func(*sfn.Options)) (*sfn.GetExecutionHistoryOutput, error)
	ListMapRuns(context.Context, *sfn.ListMapRunsInput, ...func(*sfn.Options)) (*sfn.ListMapRunsOutput, error)
	DescribeMapRun(context.Context, *sfn.DescribeMapRunInput, ...func(*sfn.Options)) (*sfn.DescribeMapRunOutput, error)
}

// stderrWriter receives the progress lines (a variable for tests).
var stderrWriter io.Writer = os.Stderr

// pollInterval is how often a running execution is described.
var pollInterval = 2 * time.Second

// newStepFunctions builds a client for the region the ARN names.
var newStepFunctions = func(ctx context.Context, arn string) (stepFunctions, error) {
	cfg, err := awsConfigFor(ctx, arn)
	if err != nil {
		return nil, err
	}
	return sfn.NewFromConfig(cfg), nil
}

// awsConfigFor is the default AWS configuration in the region the ARN names.
func awsConfigFor(ctx context.Context, arn string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if parts := strings.Split(arn, ":"); len(parts) > 3 && parts[3] != "" {
		cfg.Region = parts[3]
	}
	return cfg, nil
}

// startDeployed starts the state machine with req and follows the execution.
func startDeployed(ctx context.Context, stateMachine string, req workflow.Request, asJSON bool, stdout, stderr io.Writer) error {
	if !strings.HasPrefix(stateMachine, "arn:") || !strings.Contains(stateMachine, ":states:") || !strings.Contains(stateMachine, ":stateMachine:") {
		return &exitError{exitRefused, fmt.Errorf("create: --state-machine %q is not a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME; the stack output StateMachineArn)", stateMachine)}
	}
	req.Options.MaxConcurrency = fitToAccount(ctx, stateMachine, req.Options.MaxConcurrency, stderr)
	c, err := newStepFunctions(ctx, stateMachine)
	if err != nil {
		return err
	}
	input, err := json.Marshal(req)
	if err != nil {
		return err
	}
	out, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(stateMachine), Input: aws.String(string(input))})
	if err != nil {
		return &exitError{exitRefused, fmt.Errorf("create: StartExecution on %s refused: %w", stateMachine, err)}
	}
	fmt.Fprintf(stderr, "execution %s\n", aws.ToString(out.ExecutionArn))
	return follow(ctx, c, aws.ToString(out.ExecutionArn), asJSON, stdout, stderr)
}

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || !strings.Contains(fs.Arg(0), ":execution:") {
		return &exitError{exitRefused, fmt.Errorf("status: give one execution ARN (arn:aws:states:REGION:ACCOUNT:execution:STATE_MACHINE:NAME), e.g. the one create --state-machine printed")}
	}
	c, err := newStepFunctions(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	return follow(ctx, c, fs.Arg(0), *asJSON, stdout, stderrWriter)
}

// follow describes the execution until it ends, printing each change of
// state or Map progress on stderr, then the result.
func follow(ctx context.Context, c stepFunctions, execution string, asJSON bool, stdout, stderr io.Writer) error {
	last := ""
	for {
		d, err := c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execution)})
		if err != nil {
			var nf *types.ExecutionDoesNotExist
			if errors.As(err, &nf) {
				return &exitError{exitRefused, fmt.Errorf("execution %s does not exist: %w", execution, err)}
			}
			return fmt.Errorf("DescribeExecution %s: %w", execution, err)
		}
		if d.Status != types.ExecutionStatusRunning && d.Status != types.ExecutionStatusPendingRedrive {
			return result(d, asJSON, stdout)
		}
		line := string(d.Status)
		if state := currentState(ctx, c, execution); state != "" {
			line += " " + state
		}
		if p := mapProgress(ctx, c, execution); p != "" {
			line += ", " + p
		}
		if line != last {
			fmt.Fprintln(stderr, line)
			last = line
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped following %s (it goes on running; `s3zip status %s` picks it up): %w", execution, execution, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// currentState is the state most recently entered, from the newest events.
func currentState(ctx context.Context, c stepFunctions, execution string) string {
	h, err := c.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(execution), ReverseOrder: true, MaxResults: 50})
	if err != nil {
		return ""
	}
	for _, ev := range h.Events {
		if ev.StateEnteredEventDetails != nil && strings.HasSuffix(string(ev.Type), "StateEntered") {
			return aws.ToString(ev.StateEnteredEventDetails.Name)
		}
	}
	return ""
}

// mapProgress is the latest Map Run's item counts.
func mapProgress(ctx context.Context, c stepFunctions, execution string) string {
	runs, err := c.ListMapRuns(ctx, &sfn.ListMapRunsInput{ExecutionArn: aws.String(execution)})
	if err != nil || len(runs.MapRuns) == 0 {
		return ""
	}
	run := runs.MapRuns[0]
	for _, r := range runs.MapRuns[1:] {
		if aws.ToTime(r.StartDate).After(aws.ToTime(run.StartDate)) {
			run = r
		}
	}
	m, err := c.DescribeMapRun(ctx, &sfn.DescribeMapRunInput{MapRunArn: run.MapRunArn})
	if err != nil || m.ItemCounts == nil {
		return ""
	}
	n := m.ItemCounts
	return fmt.Sprintf("parts %d/%d succeeded, %d failed", n.Succeeded, n.Total, n.Failed)
}

// refusedErrors are the workflow's errors for a request it refused before
// writing anything (docs/contract.md).
var refusedErrors = map[string]bool{workflow.TypeRequestError: true, workflow.TypeDestinationExistsError: true, workflow.TypeLimitError: true}

func result(d *sfn.DescribeExecutionOutput, asJSON bool, stdout io.Writer) error {
	if d.Status == types.ExecutionStatusSucceeded {
		var out workflow.FinalizeOutput
		if err := json.Unmarshal([]byte(aws.ToString(d.Output)), &out); err != nil {
			return fmt.Errorf("execution %s succeeded but its output is not the finalizer's: %w", aws.ToString(d.ExecutionArn), err)
		}
		if asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"execution": d.ExecutionArn, "archive": out.Archive, "report": out.Report, "stats": out.Stats})
		}
		st := out.Stats
		fmt.Fprintf(stdout, "archive     %s\n", out.Archive.URI)
		fmt.Fprintf(stdout, "entries     %d\n", st.Entries)
		fmt.Fprintf(stdout, "size        %s (%d bytes)%s, CRC-32 %s\n", humanBytes(out.Archive.Size), out.Archive.Size, map[bool]string{true: ", ZIP64"}[st.Zip64], out.Archive.CRC32)
		fmt.Fprintf(stdout, "copied      %s server-side\n", humanBytes(st.CopiedBytesActual))
		fmt.Fprintf(stdout, "streamed    %s through workers\n", humanBytes(st.StreamedBytesActual))
		fmt.Fprintf(stdout, "parts       %d\n", st.Parts)
		fmt.Fprintf(stdout, "report      %s\n", out.Report)
		if d.StopDate != nil && d.StartDate != nil {
			fmt.Fprintf(stdout, "wall time   %.1f s\n", d.StopDate.Sub(*d.StartDate).Seconds())
		}
		return nil
	}
	errName, cause := aws.ToString(d.Error), aws.ToString(d.Cause)
	// The workflow's causes are the function's error document; show its message.
	var doc struct{ ErrorMessage string }
	if json.Unmarshal([]byte(cause), &doc) == nil && doc.ErrorMessage != "" {
		cause = doc.ErrorMessage
	}
	err := fmt.Errorf("execution %s %s: %s: %s", aws.ToString(d.ExecutionArn), d.Status, errName, cause)
	if refusedErrors[errName] {
		return &exitError{exitRefused, err}
	}
	return &exitError{exitFailed, err}
}
