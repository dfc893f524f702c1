// Package workflow holds the handlers of the create workflow — planner, worker,
// finalizer, abort — and the state machine's contract with them: the request,
// the jobs and results that pass between states, and the error types the state
// machine retries or catches (errors.go). The Lambdas in functions/ and the CLI
// (cmd/s3zip, via Runner) call the same handlers.
package workflow
