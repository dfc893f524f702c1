package main

// This file fits a deployed run to its account. Lambda runs at most the
// account's unreserved concurrency at once, 10 in a new account, and
// throttles every invocation beyond it, while the Distributed Map starts up
// to its MaxConcurrency children, 100 by default. The state machine retries
// throttled invocations for hours, as docs/contract.md says, so such a run
// still finishes, but its extra children only wait. `create --state-machine`
// therefore reads the account's concurrency before it starts and fits the
// run's workers to it when the user left them to the deployment. When the
// user asked for more it warns, as a value given is honoured, never replaced.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// lambdaAccount is what fitting a run needs of the Lambda API.
type lambdaAccount interface {
	GetAccountSettings(context.Context, *lambda.GetAccountSettingsInput, ...func(*lambda.Options)) (*lambda.GetAccountSettingsOutput, error)
}

// newLambdaAccount builds a Lambda client for the region the state machine ARN names.
var newLambdaAccount = func(ctx context.Context, arn string) (lambdaAccount, error) {
	cfg, err := awsConfigFor(ctx, arn)
	if err != nil {
		return nil, err
	}
	return lambda.NewFromConfig(cfg), nil
}

// deploymentDefaultWorkers is the Map concurrency a deployment runs when the
// request gives none, ArchiveWorkflow's defaultMaxConcurrency.
const deploymentDefaultWorkers = 100

// accountCheckTimeout bounds the GetAccountSettings call, which only advises.
const accountCheckTimeout = 10 * time.Second

// fitWorkers decides a run's Map concurrency in an account whose Lambda runs
// at most unreserved invocations at once. asked is --workers, or 0 when it
// is not given and the deployment's default applies. It returns the
// concurrency to request, where 0 keeps the deployment's default, and the
// line to print, empty when the run fits.
func fitWorkers(asked, unreserved int) (int, string) {
	switch {
	case unreserved < 1:
		return asked, "create: warning: the account's unreserved Lambda concurrency is 0: every invocation is throttled until the reserved concurrency of other functions is lowered or the account's \"Concurrent executions\" quota raised"
	case asked > unreserved:
		return asked, fmt.Sprintf("create: warning: --workers %d is above the account's unreserved Lambda concurrency of %d: the batches beyond %d are throttled and retried until running ones end; --workers %d fits", asked, unreserved, unreserved, unreserved)
	case asked == 0 && unreserved < deploymentDefaultWorkers:
		return unreserved, fmt.Sprintf("create: the account's unreserved Lambda concurrency is %d, below the deployment's default of %d workers (unless deployed with -c defaultMaxConcurrency): running with --workers %d, as more would only be throttled", unreserved, deploymentDefaultWorkers, unreserved)
	}
	return asked, ""
}

// fitToAccount reads the account's unreserved concurrency and returns the
// run's Map concurrency that fitWorkers decides, printing it on stderr.
// Not being able to read it is a warning, and the run starts as asked.
func fitToAccount(ctx context.Context, stateMachine string, asked int, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, accountCheckTimeout)
	defer cancel()
	c, err := newLambdaAccount(ctx, stateMachine)
	var out *lambda.GetAccountSettingsOutput
	if err == nil {
		out, err = c.GetAccountSettings(ctx, &lambda.GetAccountSettingsInput{})
	}
	if err == nil && (out.AccountLimit == nil || out.AccountLimit.UnreservedConcurrentExecutions == nil) {
		err = errors.New("the answer has no AccountLimit.UnreservedConcurrentExecutions")
	}
	if err != nil {
		fmt.Fprintf(stderr, "create: warning: could not read the account's Lambda concurrency (lambda:GetAccountSettings: %v); starting without fitting the workers to it\n", err)
		return asked
	}
	workers, note := fitWorkers(asked, int(aws.ToInt32(out.AccountLimit.UnreservedConcurrentExecutions)))
	if note != "" {
		fmt.Fprintln(stderr, note)
	}
	return workers
}
