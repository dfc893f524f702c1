package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// fakeLambdaAccount answers GetAccountSettings with unreserved, or err.
type fakeLambdaAccount struct {
	unreserved *int32
	err        error
	calls      int
}

func (f *fakeLambdaAccount) GetAccountSettings(context.Context, *lambda.GetAccountSettingsInput, ...func(*lambda.Options)) (*lambda.GetAccountSettingsOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &lambda.GetAccountSettingsOutput{AccountLimit: &types.AccountLimit{ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: f.unreserved}}, nil
}

func useAccount(t *testing.T, f *fakeLambdaAccount) {
	t.Helper()
	old := newLambdaAccount
	newLambdaAccount = func(context.Context, string) (lambdaAccount, error) { return f, nil }
	t.Cleanup(func() { newLambdaAccount = old })
}

func TestFitWorkers(t *testing.T) {
	for _, tc := range []struct {
		name              string
		asked, unreserved int
		want              int
		note              string // in the line printed; "" for none
	}{
		{"default in a big account", 0, 1000, 0, ""},
		{"default at exactly the deployment's default", 0, deploymentDefaultWorkers, 0, ""},
		{"default in a new account is lowered to fit", 0, 10, 10, "running with --workers 10"},
		{"asked within the account", 40, 40, 40, ""},
		{"asked above the account is honoured, with a warning", 50, 10, 50, "--workers 50 is above the account's unreserved Lambda concurrency of 10"},
		{"no concurrency left at all", 0, 0, 0, "every invocation is throttled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note := fitWorkers(tc.asked, tc.unreserved)
			if got != tc.want {
				t.Errorf("fitWorkers(%d, %d) = %d, want %d", tc.asked, tc.unreserved, got, tc.want)
			}
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("fitWorkers(%d, %d) says %q, want a line with %q", tc.asked, tc.unreserved, note, tc.note)
			}
		})
	}
}

// create --state-machine asks Lambda for the account's unreserved
// concurrency before it starts: a new account's 10 lowers the deployment's
// default, --workers above it is honoured with a warning, and an account
// that cannot be asked still starts the run.
func TestCreateOnStateMachineFitsTheAccount(t *testing.T) {
	base := []string{"create", "--state-machine", testMachine, "--source", "s3://src/in/", "--dest", "s3://dst/out.zip"}
	for _, tc := range []struct {
		name        string
		account     *fakeLambdaAccount
		args        []string
		wantWorkers float64 // options.maxConcurrency in the execution input; 0: absent
		wantStderr  string
	}{
		{"a new account runs 10 workers", &fakeLambdaAccount{unreserved: aws.Int32(10)}, nil, 10, "the account's unreserved Lambda concurrency is 10"},
		{"a big account keeps the deployment's default", &fakeLambdaAccount{unreserved: aws.Int32(1000)}, nil, 0, ""},
		{"--workers above the account is warned about", &fakeLambdaAccount{unreserved: aws.Int32(10)}, []string{"--workers", "64"}, 64, "--workers 64 is above"},
		{"GetAccountSettings denied", &fakeLambdaAccount{err: errors.New("AccessDeniedException: not authorized to perform lambda:GetAccountSettings")}, nil, 0,
			"could not read the account's Lambda concurrency (lambda:GetAccountSettings: AccessDeniedException"},
		{"an answer without the limit", &fakeLambdaAccount{}, nil, 0, "no AccountLimit.UnreservedConcurrentExecutions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSFN{describes: []*sfn.DescribeExecutionOutput{ended(sfntypes.ExecutionStatusSucceeded, finalizerOutput, "", "")}}
			stderr := useFake(t, f)
			useAccount(t, tc.account)
			var stdout bytes.Buffer
			if err := run(context.Background(), append(base, tc.args...), &stdout); err != nil {
				t.Fatalf("create: %v\nstderr:\n%s", err, stderr)
			}
			if tc.account.calls != 1 || len(f.started) != 1 {
				t.Fatalf("%d GetAccountSettings calls and %d executions started, want 1 and 1", tc.account.calls, len(f.started))
			}
			var in struct {
				Options struct {
					MaxConcurrency float64 `json:"maxConcurrency"`
				} `json:"options"`
			}
			if err := json.Unmarshal([]byte(f.started[0]), &in); err != nil {
				t.Fatal(err)
			}
			if in.Options.MaxConcurrency != tc.wantWorkers {
				t.Errorf("options.maxConcurrency %v in the execution input, want %v", in.Options.MaxConcurrency, tc.wantWorkers)
			}
			before, _, started := strings.Cut(stderr.String(), "execution "+testExecution)
			if !started || (tc.wantStderr == "") != (strings.TrimSpace(before) == "") || !strings.Contains(before, tc.wantStderr) {
				t.Errorf("stderr before the execution started:\n%s\nwant a line with %q", before, tc.wantStderr)
			}
		})
	}
}
