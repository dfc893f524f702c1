/**
 * The adapter that lets aws-local-stepfunctions run a definition with Distributed Map
 * states. The engine runs Task, Choice, Fail, Succeed, inline Map, Retry and Catch itself;
 * it has no ItemReader, ItemBatcher, ResultWriter or tolerated-failure threshold. README.md
 * in this directory describes the rewrite; in short, in memory (the ASL file is untouched):
 *
 * - every Map state with a DISTRIBUTED ItemProcessor (or ItemReader/ItemBatcher/ResultWriter)
 *   becomes a Task state of the same name that keeps the Map's InputPath, ResultSelector,
 *   ResultPath, OutputPath, Retry, Catch and Next/End. Its Parameters are the Map's own
 *   ItemReader, ItemBatcher (BatchInput included), MaxConcurrency, ToleratedFailure* and
 *   ResultWriter fields (`...Path` fields turned into `....$`), so the engine resolves every
 *   path and intrinsic against the Map's input, exactly where Step Functions does. Its local
 *   handler reads the items (Go side, from S3), batches them, runs the unchanged ItemProcessor
 *   as child executions of the same engine (same overrides, so Retry/Catch inside apply) at
 *   most MaxConcurrency at a time, writes the results in the ResultWriter layout (Go side, to
 *   S3), and fails with States.ExceedToleratedFailureThreshold when too many children fail.
 * - every Task whose Resource is arn:aws:states:::lambda:invoke (or a Lambda ARN) gets a local
 *   handler that invokes the function by its FunctionName through `deps.invoke`.
 */
import { StateMachine } from 'aws-local-stepfunctions';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export interface AdapterDeps {
  /** Invokes a Lambda function (name or ARN) with a payload; throws an Error named after the errorType. */
  invoke(functionName: string, payload: Json): Promise<Json>;
  /** Calls the Go side's S3 adapter: "read-items" or "write-results". */
  adapter(what: 'read-items' | 'write-results', body: Json): Promise<Json>;
  /** Pause before each Retry in ms; undefined keeps the ASL's intervals. */
  retryMs?: number;
  /**
   * Instead of retryMs: the ASL's own IntervalSeconds and MaxDelaySeconds times this factor,
   * BackoffRate, MaxAttempts and JitterStrategy unchanged (0.01: the real policy, 100× faster).
   */
  retryScale?: number;
  /**
   * The account's Lambda concurrency: an invocation that starts while this many run fails with
   * Lambda.TooManyRequestsException, as Lambda throttles beyond an account's unreserved
   * concurrency (10 in a new account). Undefined: no limit.
   */
  lambdaConcurrency?: number;
  executionName: string;
  /** Redrive this failed execution (its Outcome.redrive) instead of starting a new one. */
  redrive?: Redrive;
}

/**
 * What a redrive of a failed execution continues from, as Step Functions keeps it in the
 * execution's history (Step Functions Developer Guide, "Redriving executions" and "Redriving
 * Map Runs"): the execution's input and start, the unsuccessful state (entered and never
 * exited) with the input it was entered with, and each Distributed Map Run's child executions
 * by index, so that a redriven Map Run re-runs only the children that did not succeed.
 */
export interface Redrive {
  executionInput: Json;
  startTime: string;
  state: string;
  input: Json;
  mapRuns: Record<string, { mapRun: string; children: (Json | null)[] }>;
  redriveCount: number;
}

export interface Outcome {
  status: 'SUCCEEDED' | 'FAILED';
  output?: Json;
  error?: string;
  cause?: string;
  events: SimpleEvent[];
  /** A failed execution's redrive record (deps.redrive continues it). */
  redrive?: Redrive;
}

/** One engine event, flattened: enough to assert retries and catches. */
export interface SimpleEvent {
  type: string;
  state?: string;
  child?: string; // the Map child execution it belongs to
  error?: string;
  attempt?: number;
  errorEquals?: string[];
}

const LAMBDA_INVOKE = 'arn:aws:states:::lambda:invoke';
/** A Lambda-shaped ARN for the rewritten Map, so the definition still validates. */
const MAP_ADAPTER_ARN = 'arn:aws:lambda:us-east-1:123456789012:function:s3zip-local-distributed-map';
/** Longest Task timeout setTimeout can hold (~24 days); a Map state has no timeout. */
const NO_TIMEOUT_SECONDS = 2_000_000;
/**
 * A Task without TimeoutSeconds waits 99,999,999 s on Step Functions (the states language's
 * default: the function's own timeout ends it first); aws-local-stepfunctions gives it 60 s,
 * which fails a planner that lists a million keys for longer with States.Timeout here but not
 * on AWS. The adapter gives such Tasks the longest timeout setTimeout holds.
 */
export function withStepFunctionsTaskTimeout(state: Json): void {
  if (state.Type === 'Task' && state.TimeoutSeconds === undefined && state.TimeoutSecondsPath === undefined) {
    state.TimeoutSeconds = NO_TIMEOUT_SECONDS;
  }
}

/** Distributed Map fields the adapter implements or carries over. Anything else is refused. */
const MAP_FIELDS = new Set([
  'Type', 'Comment', 'InputPath', 'OutputPath', 'ResultPath', 'ResultSelector', 'Retry', 'Catch',
  'Next', 'End', 'ItemProcessor', 'Iterator', 'ItemReader', 'ItemBatcher', 'ItemsPath', 'MaxConcurrency',
  'MaxConcurrencyPath', 'ToleratedFailurePercentage', 'ToleratedFailurePercentagePath',
  'ToleratedFailureCount', 'ToleratedFailureCountPath', 'ResultWriter', 'Label',
]);

type Handler = (input: Json) => Promise<Json>;

function taskError(name: string, cause: string): Error {
  const err = new Error(cause);
  err.name = name;
  return err;
}

/**
 * Step Functions' payload quota, in bytes of JSON: every state's input (after Parameters) and
 * output, each Map child's result and an execution's input. Over it, Step Functions fails with
 * States.DataLimitExceeded.
 */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
const DATA_LIMIT_EXCEEDED = 'States.DataLimitExceeded';

function payloadBytes(value: Json): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '');
}

/** Throws States.DataLimitExceeded when value is over the quota: terminal, as in Step Functions, where no Retry or Catch (States.ALL included) handles it. */
function checkPayload(what: string, value: Json): void {
  const bytes = payloadBytes(value);
  if (bytes <= MAX_PAYLOAD_BYTES) return;
  const err = taskError(DATA_LIMIT_EXCEEDED, `${what} is ${bytes} bytes of JSON, over Step Functions' quota of ${MAX_PAYLOAD_BYTES}`);
  Object.assign(err, { isRetryable: false, isCatchable: false }); // the engine's switches for both
  throw err;
}

/** Copies obj, turning each `<X>Path` key in `names` into `<X>.$` (a payload-template path). */
function pathsToTemplate(obj: Json, names: string[]): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(obj ?? {})) {
    if (names.includes(k)) out[`${k.slice(0, -'Path'.length)}.$`] = v;
    else out[k] = v;
  }
  return out;
}

function isDistributedMap(state: Json): boolean {
  const processor = state.ItemProcessor ?? state.Iterator;
  return (
    state.Type === 'Map' &&
    (processor?.ProcessorConfig?.Mode === 'DISTRIBUTED' || 'ItemReader' in state || 'ItemBatcher' in state || 'ResultWriter' in state)
  );
}

/** deps.invoke, throttled beyond `limit` invocations at once the way Lambda throttles them. */
function throttled(invoke: AdapterDeps['invoke'], limit: number | undefined): AdapterDeps['invoke'] {
  if (limit === undefined) return invoke;
  let running = 0;
  return async (functionName, payload) => {
    if (running >= limit) {
      // What the lambda:invoke integration reports for a throttled invocation.
      throw taskError(
        'Lambda.TooManyRequestsException',
        `Rate Exceeded. (Service: AWSLambda; Status Code: 429; Error Code: TooManyRequestsException; adapter: ${limit} invocations already running)`,
      );
    }
    running++;
    try {
      return await invoke(functionName, payload);
    } finally {
      running--;
    }
  };
}

/** A Retry field with its intervals multiplied by scale (AdapterDeps.retryScale). */
function scaleRetry(retry: Json[], scale: number): Json[] {
  return retry.map((r) => ({
    ...r,
    IntervalSeconds: (r.IntervalSeconds ?? 1) * scale,
    ...(r.MaxDelaySeconds === undefined ? {} : { MaxDelaySeconds: r.MaxDelaySeconds * scale }),
  }));
}

export function adaptDefinition(definition: Json, deps: AdapterDeps) {
  const invoke = throttled(deps.invoke, deps.lambdaConcurrency);
  const handlers: Record<string, Handler> = {};
  const retryOverrides: Record<string, number> = {};
  const events: SimpleEvent[] = [];
  const oversized: string[] = []; // state inputs and outputs over the payload quota, seen in the event logs
  const processors = new Map<string, Json>(); // Map state name → its ItemProcessor definition
  const seen = new Set<string>();
  // For a redrive record: the top-level states entered and not (yet) exited, with their inputs,
  // and each Distributed Map Run's children (a redrive's start with those it kept).
  const unexited: { name: string; input: Json }[] = [];
  const mapRuns: Redrive['mapRuns'] = {};
  // The failed Map Run a redrive continues: the one of the state it starts at, once (a state
  // that runs again later in the execution, as a read round does, starts a Map Run of its own).
  let redrivenRun = deps.redrive ? deps.redrive.mapRuns[deps.redrive.state] : undefined;

  /** Rewrites a (sub-)definition's states in place, registering handlers by state name. */
  function walk(def: Json) {
    for (const [name, state] of Object.entries<Json>(def.States)) {
      if (seen.has(name)) throw new Error(`state name ${name} is not unique: local handlers are keyed by state name`);
      seen.add(name);
      if (state.Retry && deps.retryMs !== undefined) retryOverrides[name] = deps.retryMs;
      if (state.Retry && deps.retryScale !== undefined) state.Retry = scaleRetry(state.Retry, deps.retryScale);
      if (state.Type === 'Task') {
        withStepFunctionsTaskTimeout(state);
        if (state.Resource === LAMBDA_INVOKE) {
          handlers[name] = async (input) => {
            checkPayload(`state ${name} input`, input);
            const payload = await invoke(input.FunctionName, input.Payload ?? {});
            // The lambda:invoke integration's result; the ASL picks $.Payload.
            const result = { ExecutedVersion: '$LATEST', Payload: payload, StatusCode: 200 };
            checkPayload(`state ${name} result`, result);
            return result;
          };
        } else if (/^arn:aws:lambda:/.test(state.Resource)) {
          handlers[name] = async (input) => {
            checkPayload(`state ${name} input`, input);
            const result = await invoke(state.Resource, input);
            checkPayload(`state ${name} result`, result);
            return result;
          };
        }
      } else if (state.Type === 'Map') {
        const processor = JSON.parse(JSON.stringify(state.ItemProcessor ?? state.Iterator));
        delete processor.ProcessorConfig;
        walk(processor);
        if (isDistributedMap(state)) {
          def.States[name] = mapToTask(name, state);
          processors.set(name, processor);
          handlers[name] = (input) => runDistributedMap(name, input);
        } else if (state.ItemProcessor) {
          state.ItemProcessor = processor;
        } else {
          state.Iterator = processor;
        }
      } else if (state.Type === 'Parallel') {
        for (const branch of state.Branches) walk(branch);
      }
    }
  }

  function mapToTask(name: string, map: Json): Json {
    const unknown = Object.keys(map).filter((k) => !MAP_FIELDS.has(k));
    if (unknown.length > 0) throw new Error(`Map state ${name}: the adapter does not implement ${unknown.join(', ')}`);
    const params: Json = {};
    if (map.ItemReader) {
      params.ItemReader = {
        ...map.ItemReader,
        ReaderConfig: pathsToTemplate(map.ItemReader.ReaderConfig, ['MaxItemsPath']),
      };
    } else {
      params['Items.$'] = map.ItemsPath ?? '$';
    }
    if (map.ItemBatcher) {
      params.ItemBatcher = pathsToTemplate(map.ItemBatcher, ['MaxItemsPerBatchPath', 'MaxInputBytesPerBatchPath']);
    }
    Object.assign(
      params,
      pathsToTemplate(
        {
          MaxConcurrency: map.MaxConcurrency,
          MaxConcurrencyPath: map.MaxConcurrencyPath,
          ToleratedFailurePercentage: map.ToleratedFailurePercentage,
          ToleratedFailurePercentagePath: map.ToleratedFailurePercentagePath,
          ToleratedFailureCount: map.ToleratedFailureCount,
          ToleratedFailureCountPath: map.ToleratedFailureCountPath,
        },
        ['MaxConcurrencyPath', 'ToleratedFailurePercentagePath', 'ToleratedFailureCountPath'],
      ),
    );
    for (const k of Object.keys(params)) if (params[k] === undefined) delete params[k];
    if (map.ResultWriter) params.ResultWriter = map.ResultWriter;
    const task: Json = {
      Type: 'Task',
      Comment: `adapter: Distributed Map ${name}`,
      Resource: MAP_ADAPTER_ARN,
      Parameters: params,
      TimeoutSeconds: NO_TIMEOUT_SECONDS,
    };
    for (const k of ['InputPath', 'OutputPath', 'ResultPath', 'ResultSelector', 'Retry', 'Catch', 'Next', 'End']) {
      if (k in map) task[k] = map[k];
    }
    return task;
  }

  async function readItems(p: Json): Promise<Json[]> {
    let items: Json[];
    if (p.ItemReader) {
      const res = await deps.adapter('read-items', p.ItemReader);
      items = res.Items;
    } else {
      items = p.Items;
    }
    if (!Array.isArray(items)) throw taskError('States.Runtime', 'the Map items are not an array');
    const max = p.ItemReader?.ReaderConfig?.MaxItems;
    if (typeof max === 'number' && max > 0) items = items.slice(0, max);
    return items;
  }

  /** ItemBatcher: {Items, BatchInput?} child inputs within MaxItemsPerBatch and MaxInputBytesPerBatch. */
  function batch(items: Json[], b: Json | undefined): Json[] {
    if (!b) return items;
    const maxItems = b.MaxItemsPerBatch ?? Infinity;
    const maxBytes = b.MaxInputBytesPerBatch ?? 256 * 1024;
    const make = (its: Json[]) => ('BatchInput' in b ? { Items: its, BatchInput: b.BatchInput } : { Items: its });
    const size = (its: Json[]) => Buffer.byteLength(JSON.stringify(make(its)));
    const out: Json[] = [];
    let cur: Json[] = [];
    for (const it of items) {
      if (cur.length > 0 && (cur.length >= maxItems || size([...cur, it]) > maxBytes)) {
        out.push(make(cur));
        cur = [];
      }
      cur.push(it);
      if (size(cur) > maxBytes) {
        throw taskError('States.Runtime', `an item alone exceeds MaxInputBytesPerBatch (${maxBytes} bytes)`);
      }
    }
    if (cur.length > 0) out.push(make(cur));
    return out;
  }

  async function runDistributedMap(name: string, p: Json): Promise<Json> {
    const processor = processors.get(name);
    const children = batch(await readItems(p), p.ItemBatcher);
    const n = children.length;
    const limit = p.MaxConcurrency && p.MaxConcurrency > 0 ? p.MaxConcurrency : Math.max(n, 1);
    const pct = p.ToleratedFailurePercentage;
    const count = p.ToleratedFailureCount;
    const exceeded = (failed: number) => {
      if (failed === 0) return false;
      if (pct === undefined && count === undefined) return true;
      return (count !== undefined && failed > count) || (pct !== undefined && (failed * 100) / n > pct);
    };
    // A redriven Map Run keeps its ARN and the children that succeeded; the rest run again.
    const prev = name === deps.redrive?.state ? redrivenRun : undefined;
    redrivenRun = undefined;
    const mapRun = prev?.mapRun ?? `${deps.executionName}:${name}:${Date.now()}`;
    const records: (Json | null)[] = Array.from({ length: n }, (_, i) => (prev?.children[i]?.Status === 'SUCCEEDED' ? prev.children[i] : null));
    mapRuns[name] = { mapRun, children: records };
    const succeeded: Json[] = records.filter((r) => r !== null);
    const failed: Json[] = [];
    const sm = new StateMachine(processor, { validationOptions: { checkArn: false } });
    let next = 0;
    const worker = async () => {
      while (next < n && !exceeded(failed.length)) {
        const i = next++;
        if (records[i] !== null) continue;
        const childName = `${name}-${i}`;
        const exec = sm.run(children[i], {
          overrides: { taskResourceLocalHandlers: handlers, retryIntervalOverrides: retryOverrides },
          context: { Execution: { Name: childName, Input: children[i], StartTime: new Date().toISOString() } },
        });
        collect(exec.eventLogs, childName);
        const record: Json = { Name: childName, Input: JSON.stringify(children[i]) };
        try {
          const out = await exec.result;
          checkPayload(`${childName}'s result`, out); // a child execution's output, as any execution's
          records[i] = { ...record, Status: 'SUCCEEDED', Output: JSON.stringify(out) };
          succeeded.push(records[i]);
        } catch (err) {
          const e = ((err as Error).cause ?? err) as Error;
          records[i] = { ...record, Status: 'FAILED', Error: e.name, Cause: e.message };
          failed.push(records[i]);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));

    let output: Json = succeeded.map((r) => JSON.parse(r.Output));
    if (p.ResultWriter) {
      // Step Functions exports the results of a failed Map Run too.
      const details = await deps.adapter('write-results', {
        Resource: p.ResultWriter.Resource,
        Parameters: p.ResultWriter.Parameters,
        MapRunArn: mapRun,
        Succeeded: succeeded,
        Failed: failed,
      });
      output = { MapRunArn: mapRun, ResultWriterDetails: details };
    }
    checkPayload(`state ${name} result`, output);
    if (exceeded(failed.length)) {
      const first = failed[0];
      throw taskError(
        'States.ExceedToleratedFailureThreshold',
        `The specified tolerated failure threshold was exceeded (adapter: ${failed.length} of ${n} child executions failed; ` +
          `first ${first.Name}: ${first.Error}: ${first.Cause})`,
      );
    }
    return output;
  }

  function collect(logs: AsyncGenerator<Json>, child?: string) {
    void (async () => {
      try {
        for await (const ev of logs) {
          // States other than Tasks (Choice, Pass, …) and the outputs after ResultPath are
          // measured as they pass; run() fails the execution if any was over the quota.
          if (!child && ev.type === 'StateEntered') unexited.push({ name: ev.state.name, input: ev.state.input });
          if (!child && ev.type === 'StateExited') {
            let k = unexited.length - 1;
            while (k >= 0 && unexited[k].name !== ev.state.name) k--;
            if (k >= 0) unexited.splice(k, 1);
          }
          if (ev.type === 'StateEntered' || ev.type === 'StateExited') {
            for (const [what, value] of [['input', ev.state.input], ['output', ev.state.output]] as const) {
              const bytes = value === undefined ? 0 : payloadBytes(value);
              if (bytes > MAX_PAYLOAD_BYTES) oversized.push(`${child ? `${child}: ` : ''}state ${ev.state.name} ${what} is ${bytes} bytes of JSON`);
            }
          }
          const e: SimpleEvent = { type: ev.type };
          if (ev.state?.name) e.state = ev.state.name;
          if (child) e.child = child;
          if (ev.Error !== undefined) e.error = ev.Error;
          if (ev.retry) {
            e.attempt = ev.retry.attempt;
            e.errorEquals = ev.retry.retrier?.ErrorEquals;
          }
          if (ev.catch) e.errorEquals = ev.catch.catcher?.ErrorEquals;
          events.push(e);
        }
      } catch {
        // the log ends with the execution
      }
    })();
  }

  const root = JSON.parse(JSON.stringify(definition));
  walk(root);
  let machine = new StateMachine(root, { validationOptions: { checkArn: false } });
  if (deps.redrive) {
    // A redrive continues from the unsuccessful state, with the input it was entered with: the
    // definition validated above, started there (the engine would call the states before it
    // unreachable).
    machine = new StateMachine({ ...root, StartAt: deps.redrive.state }, { validationOptions: { noValidate: true } });
  }

  return {
    definition: root,
    async run(executionInput: Json): Promise<Outcome> {
      const r = deps.redrive;
      if (r) executionInput = r.executionInput;
      const input = r ? r.input : executionInput;
      const startTime = r ? r.startTime : new Date().toISOString();
      const inputBytes = payloadBytes(input);
      if (inputBytes > MAX_PAYLOAD_BYTES) {
        // StartExecution refuses it; no state runs.
        return { status: 'FAILED', error: DATA_LIMIT_EXCEEDED, cause: `the execution's input is ${inputBytes} bytes of JSON, over Step Functions' quota of ${MAX_PAYLOAD_BYTES}`, events };
      }
      const exec = machine.run(input, {
        overrides: { taskResourceLocalHandlers: handlers, retryIntervalOverrides: retryOverrides },
        context: {
          Execution: {
            Id: `arn:aws:states:us-east-1:123456789012:execution:s3zip-local:${deps.executionName}`,
            Name: deps.executionName,
            Input: executionInput,
            StartTime: startTime,
            RedriveCount: r ? r.redriveCount : 0,
          },
        },
      });
      collect(exec.eventLogs);
      let outcome: Outcome;
      try {
        outcome = { status: 'SUCCEEDED', output: await exec.result, events };
      } catch (err) {
        const e = ((err as Error).cause ?? err) as Error;
        outcome = { status: 'FAILED', error: e.name, cause: e.message, events };
      }
      await new Promise((r) => setTimeout(r, 10)); // let the event logs drain
      if (oversized.length > 0 && outcome.error !== DATA_LIMIT_EXCEEDED) {
        // Step Functions would have failed the execution at the first of them.
        outcome = { status: 'FAILED', error: DATA_LIMIT_EXCEEDED, cause: `${oversized[0]}, over Step Functions' quota of ${MAX_PAYLOAD_BYTES}`, events };
      }
      const failedAt = unexited.at(-1);
      if (outcome.status === 'FAILED' && failedAt) {
        outcome.redrive = { executionInput, startTime, state: failedAt.name, input: failedAt.input, mapRuns, redriveCount: (r?.redriveCount ?? 0) + 1 };
      }
      return outcome;
    },
  };
}
