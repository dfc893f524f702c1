/**
 * statemachine/archive.asl.json read directly: placeholders, JSON after substitution, schema
 * (asl-validator), and the workflow contract of docs/contract.md.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import aslValidator from 'asl-validator';
import { STRING_PLACEHOLDERS, placeholdersIn, readArchiveTemplate, renderDefinition } from '../../infra/lib/asl';
import { ARCHIVE_ASL_PATH, EXTRACT_ASL_PATH } from '../../infra/lib/paths';
import { REALISTIC_SUBSTITUTIONS } from './fixtures';

const LAMBDA_SERVICE_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
  'Lambda.TooManyRequestsException',
];
// A function timeout or out-of-memory is Sandbox.Timedout on current runtimes, Lambda.Unknown
// when the error payload has no errorType (Step Functions docs, bp-lambda-serviceexception).
const WORKER_RETRYABLE = ['TransientError', 'DeadlineError', 'Sandbox.Timedout', 'Lambda.Unknown', 'States.Timeout'];
const NEVER_RETRIED = ['RequestError', 'SourceChangedError', 'ChecksumMismatchError', 'DestinationExistsError', 'LimitError'];

type Json = Record<string, any>;
const template = readArchiveTemplate();
const def = renderDefinition(REALISTIC_SUBSTITUTIONS, template) as Json;
const states = def.States as Record<string, Json>;
const buildParts = states.BuildParts;
const buildBatch = buildParts.ItemProcessor.States.BuildBatch as Json;
const readEntries = states.ReadEntries;
const readBatch = readEntries.ItemProcessor.States.ReadBatch as Json;

function retrierFor(state: Json, error: string): Json | undefined {
  return (state.Retry as Json[] | undefined)?.find((r) => (r.ErrorEquals as string[]).includes(error));
}

describe('placeholders', () => {
  test('the file uses exactly the known placeholders', () => {
    assert.deepEqual(placeholdersIn(template), [...STRING_PLACEHOLDERS].sort());
  });

  test('the file is plain JSON before substitution: every placeholder is a whole quoted string', () => {
    assert.doesNotThrow(() => JSON.parse(template));
    for (const name of STRING_PLACEHOLDERS) {
      const all = template.split(`\${${name}}`).length - 1;
      const quoted = template.split(`"\${${name}}"`).length - 1;
      assert.ok(all > 0, `${name} is used`);
      assert.equal(quoted, all, `every \${${name}} is a whole quoted JSON string`);
    }
  });

  test('batch sizes and concurrency come from the state, not the deployment', () => {
    for (const map of [buildParts, readEntries]) {
      assert.equal(map.ItemBatcher.MaxItemsPerBatch, undefined);
      assert.equal(map.MaxConcurrency, undefined);
      assert.equal(map.MaxConcurrencyPath, '$.maxConcurrency');
    }
    assert.equal(buildParts.ItemBatcher.MaxItemsPerBatchPath, '$.partsPerBatch');
    assert.equal(readEntries.ItemBatcher.MaxItemsPerBatchPath, '$.readsPerBatch');
  });

  test('every literal number is named in its state\'s Comment', () => {
    // Retry numbers are self-describing fields; these are the others.
    for (const [s, field, value] of [
      [buildParts, 'MaxInputBytesPerBatch', buildParts.ItemBatcher.MaxInputBytesPerBatch],
      [readEntries, 'MaxInputBytesPerBatch', readEntries.ItemBatcher.MaxInputBytesPerBatch],
      [buildBatch, 'TimeoutSeconds', buildBatch.TimeoutSeconds],
      [readBatch, 'TimeoutSeconds', readBatch.TimeoutSeconds],
    ] as const) {
      assert.ok(Number.isInteger(value), field);
      assert.ok(String(s.Comment).includes(`${field} ${value}`), `${field} ${value} is explained in the Comment: ${s.Comment}`);
    }
  });

  test('a missing substitution is an error, not a silent leftover', () => {
    const { ReaderFunctionArn: _omitted, ...rest } = REALISTIC_SUBSTITUTIONS;
    assert.throws(() => renderDefinition(rest, template), /ReaderFunctionArn/);
  });

  test('no placeholder survives rendering', () => {
    assert.doesNotMatch(JSON.stringify(def), /\$\{/);
  });

  test('the file reads from the path CDK loads', () => {
    assert.match(ARCHIVE_ASL_PATH, /statemachine[\\/]archive\.asl\.json$/);
  });
});

describe('asl-validator', () => {
  test('the rendered definition is valid ASL (schema, paths, ARNs, transitions)', () => {
    const result = aslValidator(structuredClone(def), { checkPaths: true, checkArn: true });
    assert.ok(result.isValid, result.errorsText('\n'));
  });

  test('the validator does catch a broken definition (guards against a vacuous check)', () => {
    const broken = structuredClone(def);
    broken.States.PlanArchive.Next = 'NoSuchState';
    assert.equal(aslValidator(broken, { checkPaths: true, checkArn: true }).isValid, false);
  });

  test('EXPRESS children render valid ASL too', () => {
    const express = renderDefinition({ ...REALISTIC_SUBSTITUTIONS, MapExecutionType: 'EXPRESS' }, template);
    const result = aslValidator(express, { checkPaths: true, checkArn: true });
    assert.ok(result.isValid, result.errorsText('\n'));
  });
});

describe('standard JSONPath ASL only (aws-local-stepfunctions runs it)', () => {
  test('no JSONata, variables or JSONata-only fields', () => {
    assert.ok(def.QueryLanguage === undefined || def.QueryLanguage === 'JSONPath');
    assert.doesNotMatch(JSON.stringify(def), /\{%/, 'no JSONata expressions');
    const forbidden = new Set(['Assign', 'Arguments', 'Output', 'QueryLanguage']);
    const found: string[] = [];
    const walk = (x: unknown, where: string) => {
      if (Array.isArray(x)) x.forEach((v, i) => walk(v, `${where}[${i}]`));
      else if (x && typeof x === 'object') {
        for (const [k, v] of Object.entries(x)) {
          if (forbidden.has(k) && where !== '') found.push(`${where}.${k}`);
          walk(v, `${where}.${k}`);
        }
      }
    };
    walk(def.States, 'States');
    assert.deepEqual(found, []);
  });

  test('only Lambda invoke and the S3 item reader/writer integrations', () => {
    const resources = new Set<string>();
    const walk = (x: unknown) => {
      if (Array.isArray(x)) x.forEach(walk);
      else if (x && typeof x === 'object') {
        for (const [k, v] of Object.entries(x)) {
          if (k === 'Resource' && typeof v === 'string') resources.add(v);
          walk(v);
        }
      }
    };
    walk(def);
    assert.deepEqual([...resources].sort(), [
      'arn:aws:states:::lambda:invoke',
      'arn:aws:states:::s3:getObject',
      'arn:aws:states:::s3:putObject',
    ]);
  });
});

describe('contract: flow', () => {
  test('PlanArchive -> HasWorkerParts -> [ReadEntries -> PlanLayout -> HasWorkerParts] -> BuildParts | FinalizeArchive -> Succeed', () => {
    assert.equal(def.StartAt, 'PlanArchive');
    assert.equal(states.PlanArchive.Next, 'HasWorkerParts');
    const choice = states.HasWorkerParts;
    assert.equal(choice.Type, 'Choice');
    // One Choice routes the read plan too: a job with nothing to read takes no extra transition.
    assert.deepEqual(choice.Choices, [
      { Variable: '$.reads', IsPresent: true, Next: 'ReadEntries' },
      { Variable: '$.workerParts', NumericGreaterThan: 0, Next: 'BuildParts' },
    ]);
    assert.equal(readEntries.Next, 'PlanLayout');
    assert.equal(states.PlanLayout.Next, 'HasWorkerParts');
    assert.equal(choice.Default, 'FinalizeArchive');
    assert.equal(buildParts.Next, 'FinalizeArchive');
    assert.equal(states[states.FinalizeArchive.Next].Type, 'Succeed');
  });

  test('every failure of planning goes to Abort with the error at $.error', () => {
    for (const name of ['PlanArchive', 'ReadEntries', 'PlanLayout']) {
      assert.deepEqual(states[name].Catch, [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Abort' }], name);
    }
  });

  test('building and finalizing the parts: what no retry mends goes to Abort, what may heal fails the execution for Redrive', () => {
    const batch = buildParts.ItemProcessor.States.BuildBatch;
    assert.equal(batch.Catch.length, 1);
    assert.equal(buildParts.ItemProcessor.States[batch.Catch[0].Next].Type, 'Pass', 'a refused batch ends its child with the refusal');
    assert.deepEqual(buildParts.ItemProcessor.States[batch.Catch[0].Next].Parameters, { refused: { 'Error.$': '$.Error', 'Cause.$': '$.Cause' } });
    assert.deepEqual(buildParts.Catch, [{ ErrorEquals: ['States.ItemReaderFailed', 'States.ResultWriterFailed'], ResultPath: '$.error', Next: 'Abort' }]);
    const finalize = states.FinalizeArchive;
    assert.equal(finalize.Catch.length, 2);
    const [restart, aborts] = finalize.Catch;
    assert.deepEqual(restart, { ErrorEquals: ['UploadRestartError'], ResultPath: '$.error', Next: 'RestartUpload' });
    assert.equal(aborts.Next, 'Abort');
    assert.equal(aborts.ResultPath, '$.error');
    assert.ok(!aborts.ErrorEquals.includes('UploadRestartError'));
    for (const heals of ['States.ALL', 'TransientError', 'DeadlineError', 'States.Timeout', 'Sandbox.Timedout', 'Lambda.Unknown', 'States.ExceedToleratedFailureThreshold']) {
      assert.ok(!aborts.ErrorEquals.includes(heals), `FinalizeArchive catches ${heals}: the run would be aborted instead of kept for Redrive`);
      assert.ok(!batch.Catch[0].ErrorEquals.includes(heals), `BuildBatch catches ${heals}`);
    }
    for (const never of ['SourceChangedError', 'RequestError', 'RefusedError', 'ChecksumMismatchError', 'DestinationExistsError', 'LimitError', 'Error']) {
      assert.ok(aborts.ErrorEquals.includes(never) && batch.Catch[0].ErrorEquals.includes(never), `${never} cannot heal: aborted`);
    }
  });

  test('an upload S3 ended at its completion is started again by the planner, then every part built anew', () => {
    const s = states.RestartUpload;
    assert.equal(s.Type, 'Task');
    assert.equal(s.Parameters.FunctionName, states.PlanArchive.Parameters.FunctionName);
    assert.deepEqual(s.Parameters.Payload, {
      'request.$': '$$.Execution.Input',
      'execution.$': '$$.Execution.Name',
      'started.$': '$$.Execution.StartTime',
      'restart.$': '$',
    });
    assert.equal(s.OutputPath, '$.Payload');
    assert.equal(s.Next, 'BuildParts');
    assert.deepEqual(s.Catch, [{ ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'Abort' }]);
    assert.ok(retrierFor(s, 'Lambda.TooManyRequestsException'), 'throttled invokes retried');
  });

  test('Abort then fails the execution with the original error', () => {
    const abort = states.Abort;
    assert.equal(abort.Next, 'ArchiveFailed');
    // Abort reports the root cause (the caught error, or a failed Map's first batch error) into $.error.
    assert.equal(abort.ResultPath, '$.error');
    assert.deepEqual(abort.ResultSelector, { 'Error.$': '$.Payload.error', 'Cause.$': '$.Payload.cause' });
    assert.equal(abort.Catch.length, 1);
    assert.deepEqual(abort.Catch[0].ErrorEquals, ['States.ALL']);
    assert.equal(abort.Catch[0].Next, 'ArchiveFailed');
    // Its own error must land beside $.error, never on it or on the whole state.
    assert.ok(abort.Catch[0].ResultPath !== undefined && !['$', '$.error'].includes(abort.Catch[0].ResultPath));
    assert.ok(abort.Retry.some((r: Json) => r.ErrorEquals.includes('States.ALL') && r.MaxAttempts >= 5), 'retried generously');
    const fail = states.ArchiveFailed;
    assert.equal(fail.Type, 'Fail');
    assert.equal(fail.ErrorPath, '$.error.Error');
    assert.equal(fail.CausePath, '$.error.Cause');
  });
});

describe('contract: payloads', () => {
  test('PlanArchive sends {request, execution, started} to the planner and keeps only its Payload', () => {
    const s = states.PlanArchive;
    assert.equal(s.Resource, 'arn:aws:states:::lambda:invoke');
    assert.equal(s.Parameters.FunctionName, REALISTIC_SUBSTITUTIONS.PlannerFunctionArn);
    // started: the execution's start, for the output's seconds (docs/output.md).
    assert.deepEqual(s.Parameters.Payload, { 'request.$': '$', 'execution.$': '$$.Execution.Name', 'started.$': '$$.Execution.StartTime' });
    assert.equal(s.OutputPath, '$.Payload');
  });

  test('PlanLayout sends {request (the execution input), execution, started, reads} to the planner', () => {
    const s = states.PlanLayout;
    assert.equal(s.Resource, 'arn:aws:states:::lambda:invoke');
    assert.equal(s.Parameters.FunctionName, REALISTIC_SUBSTITUTIONS.PlannerFunctionArn);
    assert.deepEqual(s.Parameters.Payload, {
      'request.$': '$$.Execution.Input',
      'execution.$': '$$.Execution.Name',
      'started.$': '$$.Execution.StartTime',
      'reads.$': '$.reads',
    });
    assert.equal(s.OutputPath, '$.Payload');
    assert.deepEqual(s.Retry, states.PlanArchive.Retry);
  });

  test('ReadEntries reads the read jobs, batches by the read plan, writes results under workPrefix + "map/reads"', () => {
    assert.deepEqual(readEntries.ItemReader, {
      Resource: 'arn:aws:states:::s3:getObject',
      ReaderConfig: { InputType: 'JSON' },
      Parameters: { 'Bucket.$': '$.workBucket', 'Key.$': '$.reads.jobsKey' },
    });
    assert.ok(readEntries.ItemBatcher.MaxInputBytesPerBatch <= 262144);
    assert.equal(readEntries.ToleratedFailurePercentage, 0);
    assert.deepEqual(readEntries.ItemProcessor.ProcessorConfig, { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' });
    assert.deepEqual(readEntries.ResultWriter, {
      Resource: 'arn:aws:states:::s3:putObject',
      Parameters: { 'Bucket.$': '$.workBucket', 'Prefix.$': "States.Format('{}map/reads', $.workPrefix)" },
    });
    assert.equal(readEntries.ResultPath, '$.reads.results');
    assert.deepEqual(readBatch.Parameters, { FunctionName: REALISTIC_SUBSTITUTIONS.ReaderFunctionArn, 'Payload.$': '$' });
    assert.equal(readBatch.OutputPath, '$.Payload');
    assert.ok(readBatch.TimeoutSeconds > 900, 'never cuts a 15-minute reader short');
  });

  test('BuildParts reads parts.jsonl, batches with the job, writes results under workPrefix + "map"', () => {
    assert.deepEqual(buildParts.ItemReader, {
      Resource: 'arn:aws:states:::s3:getObject',
      ReaderConfig: { InputType: 'JSONL' },
      Parameters: { 'Bucket.$': '$.workBucket', 'Key.$': '$.partsKey' },
    });
    const batcher = buildParts.ItemBatcher;
    assert.deepEqual(batcher.BatchInput, { 'job.$': '$' });
    assert.ok(Number.isInteger(batcher.MaxInputBytesPerBatch) && batcher.MaxInputBytesPerBatch <= 262144);
    assert.ok(batcher.MaxInputBytesPerBatch >= 65536, 'room for a useful batch');
    assert.equal(buildParts.MaxConcurrencyPath, '$.maxConcurrency');
    assert.equal(buildParts.MaxConcurrency, undefined);
    assert.equal(buildParts.ToleratedFailurePercentage, 0);
    assert.deepEqual(buildParts.ItemProcessor.ProcessorConfig, { Mode: 'DISTRIBUTED', ExecutionType: 'STANDARD' });
    assert.deepEqual(buildParts.ResultWriter, {
      Resource: 'arn:aws:states:::s3:putObject',
      Parameters: { 'Bucket.$': '$.workBucket', 'Prefix.$': "States.Format('{}map', $.workPrefix)" },
    });
    assert.equal(buildParts.ResultPath, '$.results');
  });

  test('BuildBatch hands the batch ({Items, BatchInput}) to the worker and returns its Payload', () => {
    assert.equal(buildParts.ItemProcessor.StartAt, 'BuildBatch');
    assert.equal(buildBatch.Resource, 'arn:aws:states:::lambda:invoke');
    assert.deepEqual(buildBatch.Parameters, { FunctionName: REALISTIC_SUBSTITUTIONS.WorkerFunctionArn, 'Payload.$': '$' });
    assert.equal(buildBatch.OutputPath, '$.Payload');
    assert.equal(buildBatch.End, true);
    assert.ok(buildBatch.TimeoutSeconds > 900, 'never cuts a 15-minute worker short');
  });

  test('FinalizeArchive gets the whole job (+ results) and keeps its Payload', () => {
    const s = states.FinalizeArchive;
    assert.deepEqual(s.Parameters, { FunctionName: REALISTIC_SUBSTITUTIONS.FinalizerFunctionArn, 'Payload.$': '$' });
    assert.equal(s.OutputPath, '$.Payload');
    assert.equal(s.ResultPath, undefined);
  });

  test('Abort sends {state, error, execution}', () => {
    assert.deepEqual(states.Abort.Parameters, {
      FunctionName: REALISTIC_SUBSTITUTIONS.AbortFunctionArn,
      Payload: { 'state.$': '$', 'error.$': '$.error', 'execution.$': '$$.Execution.Name' },
    });
  });
});

describe('contract: retries', () => {
  test('every Lambda task retries the Lambda service errors with backoff and full jitter', () => {
    for (const [name, s] of [
      ['PlanArchive', states.PlanArchive],
      ['PlanLayout', states.PlanLayout],
      ['ReadBatch', readBatch],
      ['BuildBatch', buildBatch],
      ['FinalizeArchive', states.FinalizeArchive],
    ] as const) {
      for (const err of LAMBDA_SERVICE_ERRORS) {
        const r = retrierFor(s, err);
        assert.ok(r, `${name} retries ${err}`);
        assert.ok(r.BackoffRate > 1, `${name} backs off on ${err}`);
        assert.equal(r.JitterStrategy, 'FULL', `${name} jitters ${err}`);
        assert.ok(r.MaxAttempts >= 3, `${name} retries ${err} more than once`);
      }
    }
  });

  test('every Lambda task of both workflows outlasts sustained throttling: 8 hours of retries on average, in under half the event history of a child', () => {
    // A new account runs 10 invocations at once; a Map of 100 children in it is throttled for as
    // long as the running batches hold the slots (minutes each). The throttle retrier must keep a
    // child trying for hours (FULL jitter: the mean pause is half the capped interval), and stay far
    // below the 25,000 history events of a Standard child (about 3 events per attempt).
    const extractDef = renderDefinition(REALISTIC_SUBSTITUTIONS, readArchiveTemplate(EXTRACT_ASL_PATH)) as Json;
    const tasks: [string, Json][] = [];
    const collect = (sts: Record<string, Json>) => {
      for (const [name, s] of Object.entries(sts)) {
        if (s.ItemProcessor) collect(s.ItemProcessor.States);
        if (s.Type === 'Task' && s.Resource === 'arn:aws:states:::lambda:invoke') tasks.push([name, s]);
      }
    };
    collect(states);
    collect(extractDef.States);
    assert.ok(tasks.length >= 10, `found ${tasks.length} Lambda tasks`);
    for (const [name, s] of tasks) {
      const r = retrierFor(s, 'Lambda.TooManyRequestsException');
      assert.ok(r, `${name} retries throttling`);
      assert.deepEqual(r.ErrorEquals, ['Lambda.TooManyRequestsException'], `${name}: throttling has a retrier of its own`);
      assert.equal(r.JitterStrategy, 'FULL', `${name}: throttled children must not come back in lockstep`);
      let meanSeconds = 0;
      for (let k = 0; k < r.MaxAttempts; k++) meanSeconds += Math.min(r.IntervalSeconds * r.BackoffRate ** k, r.MaxDelaySeconds) / 2;
      assert.ok(meanSeconds >= 8 * 3600, `${name}: throttled for ${Math.round(meanSeconds / 60)} min on average before failing; want ≥ 8 h`);
      assert.ok(r.MaxAttempts * 3 < 25000 / 2, `${name}: ${r.MaxAttempts} attempts would fill half a child's event history`);
    }
  });

  test('the worker and the reader retry transient conditions 3 times', () => {
    for (const [name, s] of [['BuildBatch', buildBatch], ['ReadBatch', readBatch]] as const) {
      for (const err of WORKER_RETRYABLE) {
        const r = retrierFor(s, err);
        assert.ok(r, `${name} retries ${err}`);
        assert.equal(r.MaxAttempts, 3, err);
        assert.ok(r.BackoffRate > 1, err);
      }
    }
  });

  test('the finalizer retries TransientError', () => {
    assert.ok(retrierFor(states.FinalizeArchive, 'TransientError'));
  });

  test('conditions that cannot heal are never retried anywhere but Abort', () => {
    for (const [name, s] of [
      ['PlanArchive', states.PlanArchive],
      ['ReadEntries', readEntries],
      ['ReadBatch', readBatch],
      ['PlanLayout', states.PlanLayout],
      ['BuildParts', buildParts],
      ['BuildBatch', buildBatch],
      ['FinalizeArchive', states.FinalizeArchive],
    ] as const) {
      for (const r of (s.Retry ?? []) as Json[]) {
        for (const err of [...NEVER_RETRIED, 'States.ALL', 'States.TaskFailed']) {
          assert.ok(!r.ErrorEquals.includes(err), `${name} must not retry ${err}`);
        }
      }
    }
  });

  test('the planner is not retried on its own errors (a retry could leak a multipart upload)', () => {
    const retried = (states.PlanArchive.Retry as Json[]).flatMap((r) => r.ErrorEquals as string[]);
    assert.deepEqual(retried.sort(), [...LAMBDA_SERVICE_ERRORS].sort());
  });
});
