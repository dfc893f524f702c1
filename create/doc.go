// Package create holds the handlers of the create workflow — planner,
// reader, worker, finalizer, abort — and the state machine's contract with
// them: the request, the jobs and results that pass between states, and the
// error types the state machine retries or catches (errors.go; the
// conditions both workflows name are internal/failure's). The Lambdas in
// functions/ and the CLI (cmd/s3zip, via Runner) call the same handlers,
// each through its Handle method.
//
// The files, one group per handler (the file list shows them at a glance):
//
//   - planner*.go: the planner Lambda (Planner.Handle) — the request checked
//     (planner_request), sources listed (planner_list, planner_inventory,
//     planner_preview), pinned (planner_pin), their CRC-32s learned
//     (planner_crcs, planner_round), the read rounds of compression and
//     digests (planner_reads: ReadPlan, the state a read round runs on, and
//     ReadsDone, the round as PlanLayout gets it; planner_pieces: DEFLATE
//     pieces joined), the layout cut (planner_cut, planner_split) and
//     written (planner_write), a warning when the strategy is the wrong
//     tool (planner_advice).
//   - reader.go: the reader Lambda (Reader.Handle): a read round's jobs, each
//     one piece of one object read, compressed and put.
//   - worker*.go: the worker Lambda (Worker.Handle), its build path top to
//     bottom: worker (a batch of parts, each copied, uploaded or chained),
//     worker_pipepart (a part streamed from its sources), worker_streamcopy
//     (a copy range streamed where the server's copy CRC-32 cannot be
//     trusted), worker_chain (parts assembled from rounds of copies).
//   - finalizer*.go: the finalizer Lambda (Finalizer.Handle): the central
//     directory and report (finalizer_entries), split archives
//     (finalizer_split).
//   - abort.go: the abort Lambda (Aborter.Handle).
//   - run.go: Runner, the whole state machine in process for the CLI;
//     resume.go: a kept run continued from its parts Map or its finalizer.
//   - shared by several handlers: the contract — request.go, job.go (the
//     job every state passes on), reads.go (a read job and its result:
//     ReadJob, ReadResult), output.go; config.go, errors.go and refused.go;
//     parts.go (uploading a part, which the worker and the finalizer both do);
//     planfiles.go (the plan the planner spools and the finalizer reads);
//     split.go (the keys of split archives' uploads and parts); lookup.go
//     (HEAD lookups the planner and reader make); crc.go (what the CRC-32
//     of some bytes of a source is, and how it is known: the plan, a
//     copy's answer, S3's stored checksum, a probe, pieces combined, a
//     read); objectmeta.go; mapresults.go (a Distributed Map's results);
//     s3util.go.
//
// The tests of X.go are in X_test.go; doc_test.go holds the shape of the
// package's functions (parameters, length).
//
// tools/roomstats measures how the groups hold: each file's handler by the
// calls that reach it, and the references from one handler's files to
// another's.
package create
