// Package extract unpacks a ZIP archive stored in S3 into objects under a
// prefix: the layout of create in reverse. A STORED entry is a byte range of
// the archive, so S3 copies it into its own object server-side (ranged
// UploadPartCopy into an upload created with CRC-32 FULL_OBJECT and completed
// with the entry's CRC-32, so S3 checks every byte); only compressed entries
// and small stored ones pass through a worker.
//
// The planner here (plan.go) is pure: entries and where their data starts
// in, jobs or a refusal out. The handlers run them as the state machine
// (statemachine/extract.asl.json) does: the Planner (planner.go) reads the
// archive and writes the jobs, the Worker (worker.go) runs a batch of them
// with the executor (executor.go; copyjob.go and readjob.go, one job kind
// each), the Finalizer (finalizer.go) checks what was written against the
// plan and writes the report (report.go), the Aborter (abort.go) undoes a
// failed run. Run (local.go) runs the same handlers in process for the CLI,
// and Resume (resume.go) continues a run kept after a failure. Shared by
// them: the deployment's settings (config.go), the error types the state
// machine retries or catches (errors.go), the objects' PUTs and their
// metadata (puts.go), and the S3 helpers (s3util.go).
package extract
