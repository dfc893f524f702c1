/**
 * Runs the real statemachine/archive.asl.json with aws-local-stepfunctions, its Lambda Task
 * states served over HTTP (by the Go test in this directory), and prints the outcome as one
 * JSON line on stdout. See README.md for the adapter that stands in for the Distributed Map
 * features the engine lacks (ItemReader, ItemBatcher, ResultWriter, tolerated failures).
 *
 * Environment:
 *   ASL_INVOKE_URL      base URL of the handler server (required), e.g. http://127.0.0.1:41234
 *   ASL_INPUT_FILE      file holding the execution input, JSON (required; a file, since one
 *                       environment variable holds at most 128 KiB on Linux)
 *   ASL_EXECUTION_NAME  $$.Execution.Name (default "local-execution")
 *   ASL_RETRY_MS        pause before every Retry, in ms; "" or "asl" keeps the ASL's own
 *                       IntervalSeconds/BackoffRate/jitter (default 50)
 *   ASL_RETRY_SCALE     instead of ASL_RETRY_MS: the ASL's own intervals, backoff and jitter,
 *                       IntervalSeconds and MaxDelaySeconds times this factor (e.g. 0.01)
 *   ASL_LAMBDA_CONCURRENCY  throttle every invocation beyond this many at once with
 *                       Lambda.TooManyRequestsException, as a Lambda account does (default: none)
 *   ASL_FILE            template to run (default: statemachine/archive.asl.json)
 *   ASL_REDRIVE_FILE    a failed execution's "redrive" record (its outcome's): redrive that
 *                       execution instead of starting one; ASL_INPUT_FILE is then not read
 *
 * Output: {"status":"SUCCEEDED","output":...,"events":[...]} or
 *         {"status":"FAILED","error":"...","cause":"...","events":[...]}.
 * Exit status 0 whenever the execution ran to an end; non-zero for harness failures.
 */
import * as fs from 'node:fs';
import { readArchiveTemplate, renderDefinition } from '../../infra/lib/asl';
import { adaptDefinition, type AdapterDeps, type Json } from './adapter';
import { env } from './node-compat';

/** The fake function ARNs the placeholders render to, and the handler each one names. */
const FUNCTIONS: Record<string, string> = {
  PlannerFunctionArn: 'planner',
  ReaderFunctionArn: 'reader',
  WorkerFunctionArn: 'worker',
  FinalizerFunctionArn: 'finalizer',
  AbortFunctionArn: 'abort',
};
const arnOf = (fn: string) => `arn:aws:lambda:us-east-1:123456789012:function:s3zip-local-${fn}`;

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * An error the engine's Retry/Catch match by `name`, as Step Functions matches a Lambda
 * function error by its errorType. The message is the Cause: for the lambda:invoke
 * integration, AWS puts the function's error payload there as a JSON string.
 */
function taskError(name: string, cause: string): Error {
  const err = new Error(cause);
  err.name = name;
  return err;
}

async function main() {
  const base = env('ASL_INVOKE_URL').replace(/\/+$/, '');
  const redrive = process.env.ASL_REDRIVE_FILE ? (JSON.parse(fs.readFileSync(process.env.ASL_REDRIVE_FILE, 'utf8')) as Json) : undefined;
  const input = redrive ? redrive.executionInput : (JSON.parse(fs.readFileSync(env('ASL_INPUT_FILE'), 'utf8')) as Json);
  const executionName = env('ASL_EXECUTION_NAME', 'local-execution');
  const retry = env('ASL_RETRY_MS', '50');
  const retryScale = process.env.ASL_RETRY_SCALE ? Number(process.env.ASL_RETRY_SCALE) : undefined;
  const concurrency = process.env.ASL_LAMBDA_CONCURRENCY ? Number(process.env.ASL_LAMBDA_CONCURRENCY) : undefined;
  const template = process.env.ASL_FILE ? readArchiveTemplate(process.env.ASL_FILE) : readArchiveTemplate();

  // Batch sizes are not substituted: they come from the state (the planner's Config).
  const substitutions: Record<string, string | number> = { MapExecutionType: 'STANDARD' };
  const byArn = new Map<string, string>();
  for (const [placeholder, fn] of Object.entries(FUNCTIONS)) {
    substitutions[placeholder] = arnOf(fn);
    byArn.set(arnOf(fn), fn);
  }
  const definition = renderDefinition(substitutions, template) as Json;

  /** Invokes a function the way the lambda:invoke integration does (RequestResponse). */
  async function invoke(functionName: string, payload: Json): Promise<Json> {
    const fn = byArn.get(functionName) ?? functionName;
    const res = await post(`${base}/invoke/${encodeURIComponent(fn)}`, payload);
    if (res.status >= 200 && res.status < 300) return JSON.parse(res.text) as Json;
    let errorType = 'Lambda.ServiceException';
    try {
      const doc = JSON.parse(res.text) as { errorType?: string };
      if (doc.errorType) errorType = doc.errorType;
    } catch {
      // not a function error document: a service error
    }
    throw taskError(errorType, res.text);
  }

  const deps: AdapterDeps = {
    invoke,
    adapter: async (what, body) => {
      const res = await post(`${base}/adapter/${what}`, body);
      if (res.status >= 200 && res.status < 300) return JSON.parse(res.text) as Json;
      // S3 errors of the ItemReader / ResultWriter fail the Map state as States.* errors do.
      const doc = JSON.parse(res.text) as { errorType?: string };
      throw taskError(doc.errorType ?? 'States.Runtime', res.text);
    },
    retryMs: retry === 'asl' || retryScale !== undefined ? undefined : Number(retry),
    retryScale,
    lambdaConcurrency: concurrency,
    executionName,
    redrive,
  };
  const adapted = adaptDefinition(definition, deps);
  const outcome = await adapted.run(input);
  process.stdout.write(JSON.stringify(outcome) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`execute.ts: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(2);
});
