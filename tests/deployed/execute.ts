/**
 * Runs the state machine definition *as deployed* — the ASL file from the synthesized
 * template's DefinitionS3Location with its DefinitionSubstitutions resolved the way
 * CloudFormation resolves them (done by the Go harness, written to DEPLOYED_DEFINITION) —
 * under aws-local-stepfunctions with the Distributed Map adapter of tests/asl/adapter.ts.
 *
 * Lambda tasks call the Lambda Invoke API the harness serves (POST
 * /2015-03-31/functions/{FunctionName}/invocations, signed-in as the state machine's role
 * by the header x-s3zip-caller), and turn its answer into what the lambda:invoke integration
 * gives the state: the {ExecutedVersion, Payload, StatusCode} wrapper on success; on a
 * function error (X-Amz-Function-Error) an error named after the payload's errorType
 * (Lambda.Unknown when it has none) whose cause is the payload; on a service error
 * Lambda.<exception name>.
 *
 * Environment: DEPLOYED_URL (harness base URL), DEPLOYED_DEFINITION (file), DEPLOYED_INPUT_FILE
 * (a file holding the JSON input), DEPLOYED_EXECUTION_NAME, DEPLOYED_RETRY_MS (default 50; "asl" keeps the ASL's).
 * Prints one JSON line {"status","output"|"error","cause","events"}.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { adaptDefinition, type AdapterDeps, type Json } from '../asl/adapter';
import { env } from '../asl/node-compat';

function taskError(name: string, cause: string): Error {
  const err = new Error(cause);
  err.name = name;
  return err;
}

// post is fetch without undici's 300 s headers and body timeouts: a Lambda
// invocation may take its full 900 s (tests/deployed/scale_test.go's planner does).
function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; header: (name: string) => string | null; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body).toString() } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const header = (name: string) => {
          const v = res.headers[name.toLowerCase()];
          return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
        };
        resolve({ status: res.statusCode ?? 0, header, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  const base = env('DEPLOYED_URL').replace(/\/+$/, '');
  const definition = JSON.parse(fs.readFileSync(env('DEPLOYED_DEFINITION'), 'utf8')) as Json;
  // DEPLOYED_REDRIVE_FILE: a failed execution's redrive record (its outcome's "redrive"): redrive
  // it (tests/asl/adapter.ts Redrive) instead of starting an execution.
  const redrive = process.env.DEPLOYED_REDRIVE_FILE ? (JSON.parse(fs.readFileSync(process.env.DEPLOYED_REDRIVE_FILE, 'utf8')) as Json) : undefined;
  const input = redrive ? redrive.executionInput : (JSON.parse(fs.readFileSync(env('DEPLOYED_INPUT_FILE'), 'utf8')) as Json);
  const retry = env('DEPLOYED_RETRY_MS', '50');

  const deps: AdapterDeps = {
    async invoke(functionName: string, payload: Json): Promise<Json> {
      const res = await post(`${base}/2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`,
        { 'content-type': 'application/json', 'x-amz-invocation-type': 'RequestResponse' }, JSON.stringify(payload));
      const text = res.text;
      if (res.status !== 200) {
        // A Lambda service error: Step Functions names it Lambda.<exception>.
        throw taskError(`Lambda.${res.header('x-amzn-errortype') ?? 'ServiceException'}`, text);
      }
      if (res.header('x-amz-function-error')) {
        let errorType = 'Lambda.Unknown';
        try {
          const doc = JSON.parse(text) as { errorType?: string };
          if (doc && typeof doc.errorType === 'string' && doc.errorType !== '') errorType = doc.errorType;
        } catch {
          // not JSON: an unhandled error with no type
        }
        throw taskError(errorType, text);
      }
      return JSON.parse(text) as Json;
    },
    adapter: async (what, body) => {
      const res = await post(`${base}/adapter/${what}`, { 'content-type': 'application/json' }, JSON.stringify(body));
      const text = res.text;
      if (res.status >= 200 && res.status < 300) return JSON.parse(text) as Json;
      const doc = JSON.parse(text) as { errorType?: string };
      throw taskError(doc.errorType ?? 'States.Runtime', text);
    },
    retryMs: retry === 'asl' ? undefined : Number(retry),
    executionName: env('DEPLOYED_EXECUTION_NAME', 'deployed-execution'),
    redrive,
  };
  const outcome = await adaptDefinition(definition, deps).run(input);
  process.stdout.write(JSON.stringify(outcome) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`execute.ts: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(2);
});
