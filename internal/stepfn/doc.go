// Package stepfn is what Step Functions means to s3zip, written once for the
// create and the extract workflows: the ResultWriter layout a Distributed Map
// leaves in S3 (results.go), the local Map driver that runs a Map's batches
// in process the way the ASL declares them (localmap.go), the payload quotas
// (payload.go) and the rule that names a Go error the way the state
// machine's Retry and Catch match it (errors.go).
//
// It imports no workflow of this module: the workflows import it.
package stepfn
