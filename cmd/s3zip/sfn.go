package main

// This file drives the deployed workflow. `create --state-machine ARN` starts
// an execution with the request the flags describe, and `status
// EXECUTION_ARN` follows one. Both print the current state and the
// Distributed Map's progress while it runs, then the finalizer's summary or
// the execution's error and cause.
//
// The exit codes, listed in cli.go, are 0 when the archive was created, 1
// when the execution failed, and 2 when Step Functions, or the planner before
// anything was written, refused the request. Exit code 3 means Step Functions
// was not reached, for a network, credentials or throttling fault; then
// nothing was started, or the execution goes on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/stepfn"
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

// stderrWriter receives the progress lines. It is a variable for tests.
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

// awsConfigFor returns the default AWS configuration in the region the ARN
// names, with its credentials checked.
func awsConfigFor(ctx context.Context, arn string) (aws.Config, error) {
	cfg, err := loadAWSConfig(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	if parts := strings.Split(arn, ":"); len(parts) > 3 && parts[3] != "" {
		cfg.Region = parts[3]
	}
	return cfg, nil
}

// sfnRefusals are Step Functions' answers that judge the request itself, its
// ARN, input or name. Any other failure to start means the service was not
// reached, or not with these credentials.
var sfnRefusals = map[string]bool{
	"StateMachineDoesNotExist": true, "StateMachineDeleting": true, "InvalidArn": true, "InvalidExecutionInput": true,
	"InvalidName": true, "ExecutionAlreadyExists": true, "ValidationException": true, "MissingRequiredParameter": true,
}

// sfnCredentialCodes are Step Functions' answers to credentials it does
// not take.
var sfnCredentialCodes = map[string]bool{
	"UnrecognizedClientException": true, "InvalidSignatureException": true, "ExpiredTokenException": true,
	"AccessDeniedException": true, "IncompleteSignature": true, "MissingAuthenticationToken": true,
}

// sfnError says why op on arn did not happen. A refusal of the request exits
// with 2; Step Functions not reached exits with 3 and says what to fix.
func sfnError(op, arn string, err error, then string) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return unreachablef("%s %s: cannot reach Step Functions: %v; check the network, the region in the ARN and AWS_ENDPOINT_URL_SFN, then %s", op, arn, rootCause(err), then)
	}
	code := ae.ErrorCode()
	switch {
	case sfnRefusals[code]:
		return &exitError{exitRefused, fmt.Errorf("%s on %s refused: %w", op, arn, err)}
	case sfnCredentialCodes[code]:
		return unreachablef("%s %s: Step Functions did not accept the credentials (%s: %s); check AWS_PROFILE or AWS_ACCESS_KEY_ID and that the role may call states:%s, then %s", op, arn, code, ae.ErrorMessage(), op, then)
	}
	return unreachablef("%s %s: Step Functions did not take the call (%s: %s; throttled or unavailable), so %s", op, arn, code, ae.ErrorMessage(), then)
}

// resultOutput is how create --state-machine and status print an
// execution's result on stdout, as JSON or as the summary. When linkLife is
// above zero the summary holds links, signed for linkLife by presign.go, to
// what a successful run made. Progress goes to stderrWriter.
type resultOutput struct {
	stdout   io.Writer
	asJSON   bool
	linkLife time.Duration
}

// startDeployed starts the state machine with req and follows the execution.
func startDeployed(ctx context.Context, stateMachine string, req create.Request, show resultOutput) error {
	if !strings.HasPrefix(stateMachine, "arn:") || !strings.Contains(stateMachine, ":states:") || !strings.Contains(stateMachine, ":stateMachine:") {
		return &exitError{exitRefused, fmt.Errorf("create: --state-machine %q is not a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME; the stack output StateMachineArn)", stateMachine)}
	}
	// The client comes first, as it checks the credentials the account's
	// settings are read with.
	c, err := newStepFunctions(ctx, stateMachine)
	if err != nil {
		return err
	}
	req.Options.MaxConcurrency = fitToAccount(ctx, stateMachine, req.Options.MaxConcurrency, stderrWriter)
	input, err := json.Marshal(req)
	if err != nil {
		return err
	}
	started, err := c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(stateMachine), Input: aws.String(string(input))})
	if err != nil {
		return fmt.Errorf("create: %w", sfnError("StartExecution", stateMachine, err, "run the same command again (nothing was started)"))
	}
	fmt.Fprintf(stderrWriter, "execution %s\n", aws.ToString(started.ExecutionArn))
	return follow(ctx, c, aws.ToString(started.ExecutionArn), show)
}

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("status", "s3zip status EXECUTION_ARN [--json] [--presign DURATION]",
		"Follow an execution of the deployed workflow (the ARN create --state-machine printed) until it ends,\n"+
			"then print the summary or the error. --json prints the result in the schema README documents.")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	presign := presignFlag(fs)
	pos, err := fs.parseArgs(args, stdout)
	if err != nil {
		return err
	}
	linkLife, err := presignExpiry("status", fs, *presign)
	if err != nil {
		return err
	}
	if err := wantArgs("status", pos, "EXECUTION_ARN"); err != nil {
		return err
	}
	if !strings.HasPrefix(pos[0], "arn:") || !strings.Contains(pos[0], ":execution:") {
		return usageErrorf("status: %q is not an execution ARN: want arn:aws:states:REGION:ACCOUNT:execution:STATE_MACHINE:NAME, e.g. the one create --state-machine printed", pos[0])
	}
	c, err := newStepFunctions(ctx, pos[0])
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return follow(ctx, c, pos[0], resultOutput{stdout: stdout, asJSON: *asJSON, linkLife: linkLife})
}

// follow describes the execution until it ends, printing each change of
// state or Map progress on stderrWriter, then the result.
func follow(ctx context.Context, c stepFunctions, execution string, show resultOutput) error {
	last := ""
	for {
		d, err := c.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(execution)})
		if err != nil {
			var nf *types.ExecutionDoesNotExist
			if errors.As(err, &nf) {
				return &exitError{exitRefused, fmt.Errorf("execution %s does not exist: %w", execution, err)}
			}
			return sfnError("DescribeExecution", execution, err, fmt.Sprintf("`%s` to follow it again (it goes on running)", shellCommand("s3zip", "status", execution)))
		}
		if d.Status != types.ExecutionStatusRunning && d.Status != types.ExecutionStatusPendingRedrive {
			return result(ctx, d, show)
		}
		line := string(d.Status)
		if state := currentState(ctx, c, execution); state != "" {
			line += " " + state
		}
		if p := mapProgress(ctx, c, execution); p != "" {
			line += ", " + p
		}
		if line != last {
			fmt.Fprintln(stderrWriter, line)
			last = line
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped following %s (it goes on running; `%s` picks it up): %w", execution, shellCommand("s3zip", "status", execution), ctx.Err())
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

// redriveHint says how to continue an execution that failed for a cause a
// retry may mend, and is empty for any other end. For such a failure
// statemachine/archive.asl.json keeps the upload and work for Redrive.
func redriveHint(d *sfn.DescribeExecutionOutput, errName string) string {
	kept := errName == "States.ExceedToleratedFailureThreshold" || errName == "States.Timeout" || errName == "Sandbox.Timedout" ||
		strings.HasPrefix(errName, "Lambda.") || slices.Contains(stepfn.RetryableTypes, errName)
	if d.Status != types.ExecutionStatusFailed || !kept || d.RedriveStatus == types.ExecutionRedriveStatusNotRedrivable {
		return ""
	}
	arn := aws.ToString(d.ExecutionArn)
	return fmt.Sprintf("; its upload and work are kept for the deployment's keepFailedRunsDays: continue it with Redrive in the Step Functions console or `%s`, then `%s`",
		shellCommand("aws", "stepfunctions", "redrive-execution", "--execution-arn", arn), shellCommand("s3zip", "status", arn))
}

// refusedErrors are the workflow's errors for a request it refused before
// writing anything, as docs/contract.md lists them.
var refusedErrors = map[string]bool{stepfn.TypeRequestError: true, stepfn.TypeDestinationExistsError: true, stepfn.TypeLimitError: true}

// executionResult is what create --state-machine --json and status --json
// print when the execution has ended. They print these fields in this order,
// each always present and null when it does not apply. The README documents
// it under "status --json"; add fields at the end, never rename or reorder
// them.
type executionResult struct {
	Execution string              `json:"execution"` // its ARN
	Status    string              `json:"status"`    // Step Functions' SUCCEEDED, FAILED, TIMED_OUT or ABORTED
	ExitCode  int                 `json:"exitCode"`  // the command's exit status, 0 done, 1 failed or 2 refused
	Archive   *create.Archive     `json:"archive"`   // uri, size, etag and crc32 when SUCCEEDED
	Report    *string             `json:"report"`    // the report's s3:// URI when SUCCEEDED
	Stats     *create.ReportStats `json:"stats"`     // the finalizer's numbers when SUCCEEDED
	Warnings  []string            `json:"warnings"`  // what went wrong without failing a SUCCEEDED run, [] when nothing did
	Error     *string             `json:"error"`     // otherwise the error type the state machine saw, such as RequestError
	Cause     *string             `json:"cause"`     // otherwise its message
	Started   *time.Time          `json:"started"`
	Stopped   *time.Time          `json:"stopped"`
	Links     *links              `json:"links"`    // download links signed by the caller, when SUCCEEDED with --presign
	Archives  []create.Archive    `json:"archives"` // every archive of a SUCCEEDED split run, the first being archive; null otherwise
}

func result(ctx context.Context, d *sfn.DescribeExecutionOutput, show resultOutput) error {
	r := executionResult{Execution: aws.ToString(d.ExecutionArn), Status: string(d.Status), Started: d.StartDate, Stopped: d.StopDate, Warnings: []string{}}
	var err error
	if d.Status == types.ExecutionStatusSucceeded {
		var out create.FinalizeOutput
		if jerr := json.Unmarshal([]byte(aws.ToString(d.Output)), &out); jerr != nil {
			return fmt.Errorf("execution %s succeeded but its output is not the finalizer's: %w", r.Execution, jerr)
		}
		r.Archive, r.Archives, r.Stats = &out.Archive, out.Archives, &out.Stats
		if out.Report != "" {
			r.Report = &out.Report
		}
		r.Warnings = append(r.Warnings, out.Warnings...)
		r.Links = out.Links // the finalizer's, when options.presign asked for them
		if show.linkLife > 0 {
			l, warning, lerr := signLinksAsCaller(ctx, &out, show.linkLife)
			if lerr != nil {
				return fmt.Errorf("execution %s succeeded, but the archive's link was not signed: %w", r.Execution, lerr)
			}
			r.Links = l
			if warning != "" {
				r.Warnings = append(r.Warnings, warning)
			}
		}
	} else {
		errName, cause := aws.ToString(d.Error), aws.ToString(d.Cause)
		// The workflow's causes are the function's error document, so show its message.
		var doc struct{ ErrorMessage string }
		if json.Unmarshal([]byte(cause), &doc) == nil && doc.ErrorMessage != "" {
			cause = doc.ErrorMessage
		}
		r.Error, r.Cause = &errName, &cause
		code := exitFailed
		if refusedErrors[errName] {
			code = exitRefused
		}
		r.ExitCode = code
		err = &exitError{code, fmt.Errorf("execution %s %s: %s: %s%s", r.Execution, d.Status, errName, cause, redriveHint(d, errName))}
	}
	if show.asJSON {
		if jerr := printJSON(show.stdout, r); jerr != nil {
			return jerr
		}
		return err
	}
	if err != nil {
		return err
	}
	printWarnings(r.Warnings)
	printArchive(show.stdout, *r.Archive, r.Archives, *r.Stats, compressionAsked(aws.ToString(d.Input)))
	fmt.Fprintf(show.stdout, "parts       %d\n", r.Stats.Parts)
	fmt.Fprintf(show.stdout, "report      %s\n", reportOrWhy(aws.ToString(r.Report)))
	printLinks(show.stdout, r.Links)
	if r.Stopped != nil && r.Started != nil {
		fmt.Fprintf(show.stdout, "wall time   %.1f s\n", r.Stopped.Sub(*r.Started).Seconds())
	}
	return nil
}

// reportOrWhy returns the summary's report line, its URI or why there is none.
func reportOrWhy(uri string) string {
	if uri == "" {
		return "not written (the warning above says why; the archive is complete)"
	}
	return uri
}

// printWarnings shows on stderr what went wrong in a run that still
// succeeded, one line each.
func printWarnings(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(stderrWriter, "s3zip: warning:", w)
	}
}

// compressionAsked returns the options.compression of an execution's input
// when the input is the request, and empty when it is an event that names one.
func compressionAsked(input string) string {
	var req create.Request
	if json.Unmarshal([]byte(input), &req) != nil {
		return ""
	}
	return req.Options.Compression
}
