// Package extract unpacks a ZIP archive stored in S3 into objects under a
// prefix, the layout of create in reverse. A STORED entry is a byte range of
// the archive, so S3 copies it into its own object server-side, by a ranged
// UploadPartCopy into an upload created with CRC-32 FULL_OBJECT and completed
// with the entry's CRC-32, so that S3 checks every byte. Only compressed
// entries and small stored ones pass through a worker.
//
// The planner in plan.go is pure, taking entries and where their data
// starts and returning jobs or a refusal. The handlers run as
// statemachine/extract.asl.json runs them. The Planner in planner.go reads
// the archive and writes the jobs. The Worker in worker.go runs a batch of
// them with the executor in executor.go, whose job kinds are in copyjob.go
// and readjob.go. The Finalizer in finalizer.go checks what was written
// against the plan and writes the report of report.go. The Aborter in
// abort.go undoes a failed run. Run in local.go runs the same handlers in
// process for the CLI, and Resume in resume.go continues a run kept after
// a failure. They share the deployment's settings in config.go, the error
// types the state machine retries or catches in errors.go, the objects'
// PUTs and their metadata in puts.go, and the S3 helpers in s3util.go.
package extract
