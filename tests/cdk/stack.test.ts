/**
 * The ArchiveWorkflow construct, synthesized: the state machine is the ASL file plus
 * substitutions, IAM is least privilege, the trigger, buckets, logging, tracing, cdk-nag.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { Duration } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { FUNCTION_NAMES } from '../../infra/lib/archive-grants';
import { placeholdersIn, readArchiveTemplate, renderDefinition } from '../../infra/lib/asl';
import { ARCHIVE_ASL_PATH } from '../../infra/lib/paths';
import {
  DESTINATION_BUCKET,
  SOURCE_BUCKETS,
  build,
  functionsDir,
  identityStatements,
  list,
  logicalId,
  render,
  resourcesOfType,
  statementsOfRole,
  type Statement,
} from './helpers';

const built = build({ sourcePrefix: 'photos/', destinationPrefix: 'archives/' });
const { stack, workflow, template, json } = built;

const ids = {
  workBucket: logicalId(stack, workflow.workBucket),
  controlBucket: logicalId(stack, workflow.controlBucket),
  stateMachine: logicalId(stack, workflow.stateMachine),
  stateMachineRole: logicalId(stack, workflow.stateMachine.role),
  fn: Object.fromEntries(FUNCTION_NAMES.map((n) => [n, logicalId(stack, workflow.functions[n])])) as Record<string, string>,
  role: Object.fromEntries(FUNCTION_NAMES.map((n) => [n, logicalId(stack, workflow.functions[n].role as any)])) as Record<
    string,
    string
  >,
};
const stateMachineProps = json.Resources[ids.stateMachine].Properties!;

function s3Statements(statements: Statement[]): Statement[] {
  return statements.filter((s) => list(s.Action).some((a) => a.startsWith('s3:')));
}

function actionsOn(statements: Statement[], resource: string): Set<string> {
  const out = new Set<string>();
  for (const s of statements) {
    if (s.Effect !== 'Allow') continue;
    if (list(s.Resource).map(render).includes(resource)) list(s.Action).forEach((a) => out.add(a));
  }
  return out;
}

describe('state machine definition', () => {
  test('is the ASL file, uploaded unchanged as an asset (never an inline copy)', () => {
    assert.equal(stateMachineProps.DefinitionString, undefined);
    assert.equal(stateMachineProps.Definition, undefined);
    const key: string = stateMachineProps.DefinitionS3Location.Key;
    assert.match(key, /^[0-9a-f]{64}\.json$/);
    const staged = path.join(built.outdir, `asset.${key}`);
    assert.ok(fs.existsSync(staged), `asset ${staged} staged in the cloud assembly`);
    assert.equal(fs.readFileSync(staged, 'utf8'), fs.readFileSync(ARCHIVE_ASL_PATH, 'utf8'));
  });

  test('every placeholder in the file has a substitution and every substitution is used', () => {
    const subs = stateMachineProps.DefinitionSubstitutions as Record<string, unknown>;
    assert.deepEqual(Object.keys(subs).sort(), placeholdersIn(readArchiveTemplate()));
  });

  test('each function placeholder is bound to the right function', () => {
    const subs = stateMachineProps.DefinitionSubstitutions as Record<string, unknown>;
    assert.deepEqual(subs.PlannerFunctionArn, { 'Fn::GetAtt': [ids.fn.planner, 'Arn'] });
    assert.deepEqual(subs.ReaderFunctionArn, { 'Fn::GetAtt': [ids.fn.reader, 'Arn'] });
    assert.deepEqual(subs.WorkerFunctionArn, { 'Fn::GetAtt': [ids.fn.worker, 'Arn'] });
    assert.deepEqual(subs.FinalizerFunctionArn, { 'Fn::GetAtt': [ids.fn.finalizer, 'Arn'] });
    assert.deepEqual(subs.AbortFunctionArn, { 'Fn::GetAtt': [ids.fn.abort, 'Arn'] });
    assert.equal(subs.MapExecutionType, 'STANDARD');
  });

  test('renders, with the template substitutions, to tasks invoking the intended functions', () => {
    // Replace each GetAtt by a fake ARN that names the logical ID, as CloudFormation would by the real ARN.
    const subs = Object.fromEntries(
      Object.entries(stateMachineProps.DefinitionSubstitutions as Record<string, unknown>).map(([k, v]) => [
        k,
        typeof v === 'string' ? v : `arn:aws:lambda:eu-west-1:123456789012:function:${(v as any)['Fn::GetAtt'][0]}`,
      ]),
    );
    const def = renderDefinition(subs) as any;
    const fnOf = (s: any) => String(s.Parameters.FunctionName).split(':').pop();
    assert.equal(fnOf(def.States.PlanArchive), ids.fn.planner);
    assert.equal(fnOf(def.States.PlanLayout), ids.fn.planner);
    assert.equal(fnOf(def.States.ReadEntries.ItemProcessor.States.ReadBatch), ids.fn.reader);
    assert.equal(fnOf(def.States.BuildParts.ItemProcessor.States.BuildBatch), ids.fn.worker);
    assert.equal(fnOf(def.States.FinalizeArchive), ids.fn.finalizer);
    assert.equal(fnOf(def.States.Abort), ids.fn.abort);
    assert.equal(def.States.BuildParts.ItemBatcher.MaxItemsPerBatchPath, '$.partsPerBatch');
  });

  test('batch sizes reach the planner as environment (the Go defaults hold when unset); mapExecutionType the substitutions', () => {
    for (const name of FUNCTION_NAMES) {
      const env = json.Resources[ids.fn[name]].Properties!.Environment.Variables;
      assert.equal(env.PARTS_PER_BATCH, undefined, name);
      assert.equal(env.MAX_READS_PER_BATCH, undefined, name);
    }
    const b = build(
      { partsPerBatch: 3, maxReadsPerBatch: 5, mapExecutionType: 'EXPRESS', worker: { timeout: Duration.minutes(4) }, reader: { timeout: Duration.minutes(4) } },
      { nag: false },
    );
    b.template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      DefinitionSubstitutions: Match.objectLike({ MapExecutionType: 'EXPRESS' }),
    });
    b.template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ PARTS_PER_BATCH: '3', MAX_READS_PER_BATCH: '5' }) },
    });
    assert.throws(() => build({ partsPerBatch: 0 }, { nag: false }), /partsPerBatch must be a positive integer/);
  });

  test('EXPRESS children with a worker or reader that can outlive them are refused', () => {
    assert.throws(() => build({ mapExecutionType: 'EXPRESS' }, { nag: false }), /EXPRESS.*5 minutes/);
    assert.throws(
      () => build({ mapExecutionType: 'EXPRESS', worker: { timeout: Duration.minutes(4) } }, { nag: false }),
      /reader\.timeout/,
    );
  });

  test('the Map tasks outlast their functions (TimeoutSeconds 960 > 900 s)', () => {
    const def = renderDefinition(Object.fromEntries(Object.keys(stateMachineProps.DefinitionSubstitutions).map((k) => [k, k === 'MapExecutionType' ? 'STANDARD' : 'arn:aws:lambda:eu-west-1:123456789012:function:x']))) as any;
    for (const [name, task] of [
      ['worker', def.States.BuildParts.ItemProcessor.States.BuildBatch],
      ['reader', def.States.ReadEntries.ItemProcessor.States.ReadBatch],
    ] as const) {
      assert.ok(task.TimeoutSeconds > json.Resources[ids.fn[name]].Properties!.Timeout, name);
    }
  });

  test('STANDARD type, logging ALL without execution data, tracing on', () => {
    assert.equal(stateMachineProps.StateMachineType, 'STANDARD');
    assert.equal(stateMachineProps.LoggingConfiguration.Level, 'ALL');
    assert.equal(stateMachineProps.LoggingConfiguration.IncludeExecutionData, false);
    const dest = stateMachineProps.LoggingConfiguration.Destinations[0].CloudWatchLogsLogGroup.LogGroupArn;
    assert.equal(json.Resources[dest['Fn::GetAtt'][0]].Type, 'AWS::Logs::LogGroup');
    assert.deepEqual(stateMachineProps.TracingConfiguration, { Enabled: true });
    assert.equal(stateMachineProps.StateMachineName, workflow.stateMachineName);
  });
});

describe('functions', () => {
  const expected: Record<string, { memory: number; timeout: number }> = {
    planner: { memory: 6144, timeout: 900 },
    reader: { memory: 1769, timeout: 900 },
    worker: { memory: 1769, timeout: 900 },
    finalizer: { memory: 2048, timeout: 900 },
    abort: { memory: 512, timeout: 300 },
  };
  for (const name of FUNCTION_NAMES) {
    test(`${name}: Go on provided.al2023/arm64 with its own bootstrap asset, sizing and environment`, () => {
      const p = json.Resources[ids.fn[name]].Properties!;
      assert.equal(p.Runtime, 'provided.al2023');
      assert.deepEqual(p.Architectures, ['arm64']);
      assert.equal(p.Handler, 'bootstrap');
      assert.equal(p.MemorySize, expected[name].memory);
      assert.equal(p.Timeout, expected[name].timeout);
      const env = p.Environment.Variables;
      assert.deepEqual(env.WORK_BUCKET, { Ref: ids.workBucket });
      assert.equal(env.WORK_PREFIX, 's3zip-work/');
      assert.equal(env.DEFAULT_MAX_CONCURRENCY, '100');
      assert.equal(env.ALLOWED_SOURCE_BUCKETS, SOURCE_BUCKETS.join(','));
      assert.equal(env.ALLOWED_SOURCE_PREFIX, 'photos/');
      assert.equal(env.ALLOWED_DESTINATIONS, `${DESTINATION_BUCKET}/archives/`);
      assert.deepEqual(env.CONTROL_BUCKET, { Ref: ids.controlBucket });
      // The code asset is the function's own folder, staged with its bootstrap.
      const hash = String(p.Code.S3Key).replace(/\.zip$/, '');
      const staged = path.join(built.outdir, `asset.${hash}`);
      assert.ok(fs.existsSync(path.join(staged, 'bootstrap')), `${name} asset holds bootstrap`);
      assert.ok(
        fs.readFileSync(path.join(staged, 'bootstrap')).equals(fs.readFileSync(path.join(functionsDir(), name, 'bootstrap'))),
        `${name} asset is <functionsDir>/${name}`,
      );
    });
  }

  test('sizing props override the defaults', () => {
    const b = build({ worker: { memorySize: 3008, timeout: Duration.minutes(10) } }, { nag: false });
    b.template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'bootstrap',
      MemorySize: 3008,
      Timeout: 600,
    });
  });

  test('the planner has the /tmp its entries file needs, the finalizer the /tmp its report needs; the others keep the default', () => {
    for (const name of FUNCTION_NAMES) {
      const p = json.Resources[ids.fn[name]].Properties!;
      if (name === 'planner') {
        assert.deepEqual(p.EphemeralStorage, { Size: 4096 }, 'planner /tmp (10 M entries: a 2.1 GB entries file)');
      } else if (name === 'finalizer') {
        assert.deepEqual(p.EphemeralStorage, { Size: 4096 }, 'finalizer /tmp (10 M entries: a 2.3 GB report)');
      } else {
        assert.equal(p.EphemeralStorage, undefined, `${name} keeps the default /tmp`);
      }
    }
  });

  test('a missing bootstrap fails synth with a hint', () => {
    assert.throws(() => build({ functionsDir: '/nonexistent-s3zip' }, { nag: false }), /bootstrap not found.*make lambdas/);
  });

  test('no function role carries an AWS managed policy', () => {
    for (const name of FUNCTION_NAMES) {
      assert.equal(json.Resources[ids.role[name]].Properties!.ManagedPolicyArns, undefined, name);
    }
  });
});

describe('IAM: least privilege', () => {
  const all = identityStatements(json);

  /**
   * Resource "*" is accepted only where AWS offers no resource-level permission:
   * - X-Ray PutTraceSegments/PutTelemetryRecords/GetSamplingRules/GetSamplingTargets (tracing);
   * - CloudWatch Logs vended-log delivery APIs (Create/Get/Update/Delete/ListLogDeliveries,
   *   Put/DescribeResourcePolicies, DescribeLogGroups), which Step Functions logging requires.
   */
  const STAR_RESOURCE_ACTIONS = new Set([
    'xray:PutTraceSegments',
    'xray:PutTelemetryRecords',
    'xray:GetSamplingRules',
    'xray:GetSamplingTargets',
    'logs:CreateLogDelivery',
    'logs:GetLogDelivery',
    'logs:UpdateLogDelivery',
    'logs:DeleteLogDelivery',
    'logs:ListLogDeliveries',
    'logs:PutResourcePolicy',
    'logs:DescribeResourcePolicies',
    'logs:DescribeLogGroups',
  ]);

  test('there are statements to check', () => {
    assert.ok(all.length > 20, `found ${all.length}`);
  });

  test('no wildcard actions anywhere', () => {
    for (const { policy, statement } of all) {
      for (const a of list(statement.Action)) assert.ok(!a.includes('*'), `${policy}: action ${a}`);
    }
  });

  test('Resource "*" only for X-Ray and log delivery, and only on the state machine role', () => {
    for (const { policy, roles, statement } of all) {
      if (!list(statement.Resource).some((r) => r === '*')) continue;
      for (const a of list(statement.Action)) assert.ok(STAR_RESOURCE_ACTIONS.has(a), `${policy}: ${a} on *`);
      assert.deepEqual(roles, [ids.stateMachineRole], policy);
    }
  });

  test('only Allow statements (no Deny to reason about)', () => {
    for (const { policy, statement } of all) assert.equal(statement.Effect, 'Allow', policy);
  });

  test('every S3 resource is one of the named buckets/prefixes', () => {
    const work = `<${ids.workBucket}.Arn>`;
    const allowed = new Set([
      `${work}/s3zip-work/*`,
      work, // ListBucket only, with a prefix condition (checked below)
      `<${ids.controlBucket}.Arn>/*`,
      ...SOURCE_BUCKETS.flatMap((b) => [`arn:<AWS::Partition>:s3:::${b}`, `arn:<AWS::Partition>:s3:::${b}/photos/*`]),
      `arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}`,
      `arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}/archives/*`,
    ]);
    for (const { policy, statement } of all) {
      if (!list(statement.Action).some((a) => a.startsWith('s3:'))) continue;
      for (const r of list(statement.Resource).map(render)) {
        assert.ok(allowed.has(r), `${policy}: S3 resource ${r}`);
        if (!r.includes('/')) {
          // Bucket-level ARNs: listing only.
          for (const a of list(statement.Action)) {
            assert.ok(['s3:ListBucket', 's3:ListBucketMultipartUploads'].includes(a), `${policy}: ${a} on bucket ${r}`);
          }
        }
      }
    }
  });

  test('every ListBucket is confined to its prefix', () => {
    for (const { policy, statement } of all) {
      if (!list(statement.Action).includes('s3:ListBucket')) continue;
      const prefixes = list(statement.Condition?.StringLike?.['s3:prefix']);
      assert.ok(prefixes.length > 0, `${policy}: ListBucket without prefix condition`);
      const r = list(statement.Resource).map(render);
      const expected = r.every((x) => x.includes(ids.workBucket))
        ? 's3zip-work/*'
        : r.every((x) => x.includes(DESTINATION_BUCKET))
          ? 'archives/*'
          : 'photos/*';
      assert.deepEqual(prefixes, [expected], `${policy}: ${r.join(',')}`);
    }
  });

  test('sources: read-only; reader and worker read, the finalizer reads the tail, the planner lists only, abort nothing', () => {
    for (const name of FUNCTION_NAMES) {
      const st = s3Statements(statementsOfRole(json, ids.role[name]));
      for (const b of SOURCE_BUCKETS) {
        const actions = actionsOn(st, `arn:<AWS::Partition>:s3:::${b}/photos/*`);
        if (name === 'reader' || name === 'worker') {
          assert.deepEqual([...actions].sort(), ['s3:GetObject', 's3:GetObjectVersion'], `${name} ${b}`);
        } else if (name === 'finalizer') {
          // The last part may hold small objects after the last copy: the finalizer reads them.
          assert.deepEqual([...actions].sort(), ['s3:GetObject', 's3:GetObjectVersion'], `${name} ${b}`);
        } else {
          // The planner lists sources; a manifest's objects are looked up by the reader.
          assert.equal(actions.size, 0, `${name} must not read ${b}`);
        }
      }
    }
  });

  test('destination: each function gets the calls it makes (tests/deployed measures them), abort aborts and deletes a failed split run\'s archives', () => {
    const dest = `arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}/archives/*`;
    const writeSets: Record<string, string[]> = {
      planner: ['s3:AbortMultipartUpload', 's3:GetObject', 's3:PutObject', 's3:PutObjectTagging'],
      worker: ['s3:PutObject'],
      finalizer: ['s3:DeleteObject', 's3:GetObject', 's3:PutObject'],
    };
    for (const name of ['planner', 'worker', 'finalizer']) {
      const actions = actionsOn(statementsOfRole(json, ids.role[name]), dest);
      assert.deepEqual([...actions].sort(), writeSets[name], name);
    }
    const abort = actionsOn(statementsOfRole(json, ids.role.abort), dest);
    // Never PutObject: abort writes nothing to the destination.
    assert.deepEqual([...abort].sort(), ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:ListMultipartUploadParts']);
    assert.equal(actionsOn(statementsOfRole(json, ids.role.reader), dest).size, 0, 'the reader never touches the destination');
  });

  test('work prefix: planner, reader and worker write, planner drops joined pieces, reader aborts its probe upload, workers delete consumed chain rounds, the finalizer records a split run\'s archives, finalizer and abort delete', () => {
    const work = `<${ids.workBucket}.Arn>/s3zip-work/*`;
    for (const name of FUNCTION_NAMES) {
      const actions = actionsOn(statementsOfRole(json, ids.role[name]), work);
      const want =
        name === 'planner'
          ? ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject']
          : name === 'reader'
            ? ['s3:AbortMultipartUpload', 's3:PutObject']
            : name === 'worker' || name === 'finalizer'
            ? ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject', 's3:PutObject']
            : ['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:GetObject'];
      assert.deepEqual([...actions].sort(), want, name);
    }
  });

  test('control bucket: only the planner reads it', () => {
    const control = `<${ids.controlBucket}.Arn>/*`;
    for (const name of FUNCTION_NAMES) {
      const actions = actionsOn(statementsOfRole(json, ids.role[name]), control);
      assert.deepEqual([...actions], name === 'planner' ? ['s3:GetObject'] : [], name);
    }
  });

  test('functions write only their own log group', () => {
    for (const name of FUNCTION_NAMES) {
      const logsStatements = statementsOfRole(json, ids.role[name]).filter((s) => list(s.Action).some((a) => a.startsWith('logs:')));
      assert.equal(logsStatements.length, 1, name);
      const r = list(logsStatements[0].Resource).map(render);
      const logGroupId = json.Resources[ids.fn[name]].Properties!.LoggingConfig.LogGroup.Ref;
      assert.deepEqual(r, [`<${logGroupId}.Arn>`], name);
    }
  });

  test('state machine role: invoke exactly the five functions (and their versions)', () => {
    const st = statementsOfRole(json, ids.stateMachineRole).filter((s) => list(s.Action).includes('lambda:InvokeFunction'));
    assert.equal(st.length, 1);
    assert.deepEqual(list(st[0].Action), ['lambda:InvokeFunction']);
    const expected = FUNCTION_NAMES.flatMap((n) => [`<${ids.fn[n]}.Arn>`, `<${ids.fn[n]}.Arn>:*`]);
    assert.deepEqual(list(st[0].Resource).map(render).sort(), expected.sort());
  });

  test('state machine role: ItemReader and ResultWriter on the work prefix only', () => {
    const st = s3Statements(statementsOfRole(json, ids.stateMachineRole));
    const resources = new Set(st.flatMap((s) => list(s.Resource).map(render)));
    assert.deepEqual([...resources], [`<${ids.workBucket}.Arn>/s3zip-work/*`]);
    const actions = actionsOn(st, `<${ids.workBucket}.Arn>/s3zip-work/*`);
    assert.deepEqual([...actions].sort(), ['s3:AbortMultipartUpload', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:PutObject']);
  });

  test('state machine role: starts and controls only its own child executions, without a cycle', () => {
    const st = statementsOfRole(json, ids.stateMachineRole).filter((s) => list(s.Action).some((a) => a.startsWith('states:')));
    const name = workflow.stateMachineName;
    const start = st.find((s) => list(s.Action).includes('states:StartExecution'))!;
    assert.deepEqual(list(start.Action), ['states:StartExecution']);
    assert.deepEqual(list(start.Resource).map(render), [
      `arn:<AWS::Partition>:states:eu-west-1:123456789012:stateMachine:${name}`,
    ]);
    const control = st.find((s) => list(s.Action).includes('states:DescribeExecution'))!;
    assert.deepEqual(list(control.Action).sort(), ['states:DescribeExecution', 'states:RedriveExecution', 'states:StopExecution']);
    assert.deepEqual(list(control.Resource).map(render), [
      `arn:<AWS::Partition>:states:eu-west-1:123456789012:execution:${name}/*`,
      `arn:<AWS::Partition>:states:eu-west-1:123456789012:execution:${name}:*`,
    ]);
    // The role's policy must not reference the state machine resource (that is the cycle).
    const policyText = JSON.stringify(st);
    assert.ok(!policyText.includes(ids.stateMachine), 'no Ref/GetAtt of the state machine in its own role');
  });

  test('no KMS permissions without a configured key', () => {
    for (const { policy, statement } of all) {
      assert.ok(!list(statement.Action).some((a) => a.startsWith('kms:')), policy);
    }
  });

  test('with source/destination keys configured, KMS is granted on exactly those keys', () => {
    const sourceKey = 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555';
    const destinationKey = 'arn:aws:kms:eu-west-1:123456789012:key/66666666-7777-8888-9999-000000000000';
    const b = build({ sourceKmsKeyArns: [sourceKey], destinationKmsKeyArn: destinationKey }, { nag: false });
    const kmsStatements = identityStatements(b.json).filter(({ statement }) => list(statement.Action).some((a) => a.startsWith('kms:')));
    assert.ok(kmsStatements.length > 0);
    for (const { statement } of kmsStatements) {
      for (const r of list(statement.Resource).map(render)) assert.ok([sourceKey, destinationKey].includes(r), r);
    }
    const sourceUsers = kmsStatements.filter(({ statement }) => list(statement.Resource).includes(sourceKey));
    assert.deepEqual(
      sourceUsers.flatMap((s) => list(s.statement.Action)).sort(),
      ['kms:Decrypt', 'kms:Decrypt', 'kms:Decrypt'],
      'reader, worker and finalizer decrypt (the planner only lists sources)',
    );
  });

  test('a work-bucket key switches the buckets to SSE-KMS and grants use of that key only', () => {
    let key: kms.Key | undefined;
    const b = build(
      (s) => {
        key = new kms.Key(s, 'WorkKey', { enableKeyRotation: true });
        return { encryptionKey: key };
      },
      { nag: false },
    );
    const keyId = b.stack.getLogicalId(key!.node.defaultChild as kms.CfnKey);
    for (const id of [logicalId(b.stack, b.workflow.workBucket), logicalId(b.stack, b.workflow.controlBucket)]) {
      const sse = b.json.Resources[id].Properties!.BucketEncryption.ServerSideEncryptionConfiguration[0];
      assert.deepEqual(sse.ServerSideEncryptionByDefault, { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    }
    const kmsStatements = identityStatements(b.json).filter(({ statement }) => list(statement.Action).some((a) => a.startsWith('kms:')));
    const roles = new Set(kmsStatements.flatMap((s) => s.roles));
    assert.equal(roles.size, 6, 'five functions and the state machine');
    for (const { statement } of kmsStatements) {
      assert.deepEqual(list(statement.Resource).map(render), [`<${keyId}.Arn>`]);
    }
  });
});

describe('trigger', () => {
  const rules = resourcesOfType(json, 'AWS::Events::Rule');

  test('Object Created under requests/ in the control bucket starts an execution', () => {
    assert.equal(rules.length, 1);
    const p = rules[0][1].Properties!;
    assert.deepEqual(p.EventPattern, {
      source: ['aws.s3'],
      'detail-type': ['Object Created'],
      detail: { bucket: { name: [{ Ref: ids.controlBucket }] }, object: { key: [{ prefix: 'requests/' }] } },
    });
    assert.equal(p.Targets.length, 1);
    assert.deepEqual(p.Targets[0].Arn, { Ref: ids.stateMachine });
  });

  test('the execution input is {"requestObject": {"bucket", "key"}} taken from the event', () => {
    const t = rules[0][1].Properties!.Targets[0].InputTransformer;
    const paths = t.InputPathsMap as Record<string, string>;
    const event = { detail: { bucket: { name: 'ctl-bucket' }, object: { key: 'requests/a b.json' } } };
    const lookup = (p: string) => p.replace(/^\$\./, '').split('.').reduce((o: any, k) => o?.[k], event);
    const input = (t.InputTemplate as string).replace(/<([^<>]+)>/g, (_m: string, name: string) => {
      assert.ok(name in paths, `placeholder <${name}> has a path`);
      return JSON.stringify(lookup(paths[name]));
    });
    assert.deepEqual(JSON.parse(input), { requestObject: { bucket: 'ctl-bucket', key: 'requests/a b.json' } });
  });

  test('the control bucket sends its events to EventBridge without a custom resource', () => {
    const p = json.Resources[ids.controlBucket].Properties!;
    assert.deepEqual(p.NotificationConfiguration, { EventBridgeConfiguration: { EventBridgeEnabled: true } });
    assert.equal(resourcesOfType(json, 'Custom::S3BucketNotifications').length, 0);
    assert.equal(resourcesOfType(json, 'AWS::Lambda::Function').length, 5, 'only the five workflow functions');
  });

  test('the rule role may start only this state machine', () => {
    const target = rules[0][1].Properties!.Targets[0];
    const roleId = target.RoleArn['Fn::GetAtt'][0];
    const st = statementsOfRole(json, roleId);
    assert.deepEqual(st.map((s) => [list(s.Action), list(s.Resource)]), [[['states:StartExecution'], [{ Ref: ids.stateMachine }]]]);
  });
});

describe('buckets', () => {
  const buckets = resourcesOfType(json, 'AWS::S3::Bucket');

  test('work bucket: work objects expire, and incomplete uploads are aborted, a day after a failed run is kept for Redrive (7 days)', () => {
    const rules = json.Resources[ids.workBucket].Properties!.LifecycleConfiguration.Rules as any[];
    const expire = rules.find((r) => r.Prefix === 's3zip-work/' && r.ExpirationInDays !== undefined);
    assert.ok(expire, 'expiration rule on the work prefix');
    assert.equal(expire.ExpirationInDays, 8);
    assert.equal(expire.Status, 'Enabled');
    const abort = rules.find((r) => r.AbortIncompleteMultipartUpload);
    assert.equal(abort?.AbortIncompleteMultipartUpload.DaysAfterInitiation, 8);
    assert.equal(abort?.Status, 'Enabled');
  });

  test('control bucket: incomplete uploads are aborted after 1 day', () => {
    const rules = json.Resources[ids.controlBucket].Properties!.LifecycleConfiguration.Rules as any[];
    assert.ok(rules.some((r) => r.AbortIncompleteMultipartUpload?.DaysAfterInitiation === 1 && r.Status === 'Enabled'));
  });

  test('source and destination buckets are imported, never created', () => {
    for (const [, r] of buckets) {
      assert.equal(r.Properties?.BucketName, undefined, 'buckets we create get generated names');
    }
    assert.equal(buckets.length, 3, 'work, control, access logs');
  });

  test('every bucket blocks public access, is encrypted, and its policy denies non-TLS', () => {
    for (const [id, r] of buckets) {
      assert.deepEqual(
        r.Properties!.PublicAccessBlockConfiguration,
        { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
        id,
      );
      const sse = r.Properties!.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault;
      assert.equal(sse.SSEAlgorithm, 'AES256', id);
      const policy = resourcesOfType(json, 'AWS::S3::BucketPolicy').find(([, p]) => p.Properties!.Bucket.Ref === id);
      assert.ok(policy, `${id} has a bucket policy`);
      const deny = list<any>(policy![1].Properties!.PolicyDocument.Statement).find(
        (s) => s.Effect === 'Deny' && s.Condition?.Bool?.['aws:SecureTransport'] === 'false',
      );
      assert.ok(deny, `${id} denies insecure transport`);
    }
  });

  test('work and control buckets log access to the access-log bucket', () => {
    const logsBucket = logicalId(stack, workflow.accessLogsBucket);
    for (const id of [ids.workBucket, ids.controlBucket]) {
      assert.deepEqual(json.Resources[id].Properties!.LoggingConfiguration.DestinationBucketName, { Ref: logsBucket });
    }
  });
});

describe('outputs', () => {
  test('StateMachineArn, ControlBucketName, WorkBucketName', () => {
    template.hasOutput('StateMachineArn', { Value: { Ref: ids.stateMachine } });
    template.hasOutput('ControlBucketName', { Value: { Ref: ids.controlBucket } });
    template.hasOutput('WorkBucketName', { Value: { Ref: ids.workBucket } });
  });
});

describe('cdk-nag AwsSolutions', () => {
  test('no unsuppressed errors', () => {
    const errors = Annotations.fromStack(stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
    assert.deepEqual(
      errors.map((e) => `${e.id}: ${String(e.entry.data).slice(0, 160)}`),
      [],
    );
  });

  test('no unsuppressed warnings', () => {
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*'));
    assert.deepEqual(
      warnings.map((e) => `${e.id}: ${String(e.entry.data).slice(0, 160)}`),
      [],
    );
  });

  test('the checks are live: an insecure bucket added to the stack is reported', () => {
    const b = build({}, { extra: (s) => void new s3.Bucket(s, 'Insecure') });
    const errors = Annotations.fromStack(b.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-S(1|10)\\b.*'));
    assert.ok(errors.length >= 2, `expected S1 and S10 on the insecure bucket, got ${errors.length}`);
  });

  test('every suppression has a specific reason, and IAM5 suppressions name their findings', () => {
    let count = 0;
    for (const [id, r] of Object.entries(json.Resources)) {
      for (const rule of list<any>(r.Metadata?.cdk_nag?.rules_to_suppress)) {
        count++;
        assert.match(rule.id, /^AwsSolutions-/, id);
        assert.equal(typeof rule.reason, 'string', `${id} ${rule.id}`);
        assert.ok(rule.reason.trim().length >= 40, `${id} ${rule.id}: reason too thin: "${rule.reason}"`);
        if (rule.id === 'AwsSolutions-IAM5') {
          assert.ok(list(rule.applies_to).length > 0, `${id}: IAM5 suppressed without appliesTo`);
        }
      }
    }
    assert.ok(count > 0, 'suppressions exist (otherwise this test checks nothing)');
  });
});
