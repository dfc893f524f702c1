/**
 * The extract workflow's construct: the definition is statemachine/extract.asl.json unchanged,
 * the roles are scoped to the configured prefixes, the rule starts it for new ZIPs.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { Duration, type Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import type { ArchiveWorkflow } from '../../infra/lib/archive-workflow';
import { placeholdersIn, renderDefinition } from '../../infra/lib/asl';
import { EXTRACT_FUNCTION_NAMES } from '../../infra/lib/extract-grants';
import { ExtractWorkflow } from '../../infra/lib/extract-workflow';
import { EXTRACT_ASL_PATH } from '../../infra/lib/paths';
import { build, list, render, statementsOfRole, tempDir } from './helpers';

/** Asset folders for the four extract functions (placeholders: Code.fromAsset only copies them). */
function extractFunctionsDir(): string {
  const dir = tempDir('s3zip-cdk-extract-functions-');
  for (const name of EXTRACT_FUNCTION_NAMES) {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, 'bootstrap'), `#!/bin/sh\n# placeholder for ${name}\n`, { mode: 0o755 });
  }
  return dir;
}
const FUNCTIONS = extractFunctionsDir();

function withExtract(props: Partial<ConstructorParameters<typeof ExtractWorkflow>[2]> = {}, archive: Parameters<typeof build>[0] = {}) {
  let extract!: ExtractWorkflow;
  const b = build(archive, {
    extra: (stack: Stack) => {
      const archive = stack.node.findChild('ArchiveWorkflow') as ArchiveWorkflow;
      extract = new ExtractWorkflow(stack, 'ExtractWorkflow', {
        archiveBucket: 's3zip-test-uploads',
        workBucket: archive.workBucket,
        functionsDir: FUNCTIONS,
        ...props,
      });
    },
  });
  return { ...b, extract };
}

const B = withExtract();
const smId = B.stack.getLogicalId(B.extract.stateMachine.node.defaultChild as any);
const sm = B.json.Resources[smId].Properties!;
const roleId = (name: (typeof EXTRACT_FUNCTION_NAMES)[number]) => B.stack.getLogicalId(B.extract.functions[name].role!.node.defaultChild as any);

describe('extract state machine', () => {
  test('the definition is statemachine/extract.asl.json, unchanged', () => {
    const key: string = sm.DefinitionS3Location.Key;
    const staged = path.join(B.outdir, `asset.${key}`);
    assert.equal(fs.readFileSync(staged, 'utf8'), fs.readFileSync(EXTRACT_ASL_PATH, 'utf8'));
  });

  test('the file is plain JSON whose placeholders are all quoted strings with a substitution', () => {
    const text = fs.readFileSync(EXTRACT_ASL_PATH, 'utf8');
    const def = JSON.parse(text);
    assert.deepEqual(Object.keys(sm.DefinitionSubstitutions).sort(), placeholdersIn(text));
    assert.doesNotMatch(text, /[^"]\$\{[A-Za-z]+\}[^"]/, 'every ${...} stands alone inside quotes');
    const map = def.States.RunJobs;
    assert.equal(map.ItemBatcher.MaxItemsPerBatchPath, '$.batchSize');
    assert.equal(map.MaxConcurrencyPath, '$.maxConcurrency');
    assert.equal(map.ItemReader.ReaderConfig.InputType, 'JSONL');
    assert.match(map.Comment, /196608/, 'the number in the file is named in a Comment');
  });

  test('each task invokes its own function; Catch goes to Abort; retries only what can heal', () => {
    const subs = Object.fromEntries(
      Object.entries(sm.DefinitionSubstitutions as Record<string, unknown>).map(([k, v]) => [
        k,
        typeof v === 'string' ? v : `arn:aws:lambda:eu-west-1:123456789012:function:${(v as any)['Fn::GetAtt'][0]}`,
      ]),
    );
    const def = renderDefinition(subs, fs.readFileSync(EXTRACT_ASL_PATH, 'utf8')) as any;
    const fnOf = (s: any) => String(s.Parameters.FunctionName).split(':').pop();
    const fnId = (n: (typeof EXTRACT_FUNCTION_NAMES)[number]) => B.stack.getLogicalId(B.extract.functions[n].node.defaultChild as any);
    assert.equal(fnOf(def.States.PlanExtraction), fnId('extract-planner'));
    assert.equal(fnOf(def.States.RunJobs.ItemProcessor.States.RunBatch), fnId('extract-worker'));
    assert.equal(fnOf(def.States.FinalizeExtraction), fnId('extract-finalizer'));
    assert.equal(fnOf(def.States.Abort), fnId('extract-abort'));
    for (const s of ['PlanExtraction', 'RunJobs', 'FinalizeExtraction']) {
      assert.equal(def.States[s].Catch[0].Next, 'Abort', s);
    }
    const retried = [def.States.PlanExtraction, def.States.RunJobs.ItemProcessor.States.RunBatch, def.States.FinalizeExtraction]
      .flatMap((s: any) => s.Retry.flatMap((r: any) => r.ErrorEquals));
    for (const never of ['RefusedError', 'ExistsError', 'ChecksumError', 'SourceChangedError', 'FormatError', 'RequestError', 'States.ALL']) {
      assert.ok(!retried.includes(never), `${never} cannot heal and must not be retried`);
    }
    assert.ok(retried.includes('TransientError'));
  });
});

describe('extract IAM', () => {
  const s3Statements = (name: (typeof EXTRACT_FUNCTION_NAMES)[number]) =>
    statementsOfRole(B.json, roleId(name)).filter((s) => list(s.Action).some((a) => a.startsWith('s3:')));

  test('objects: the archive prefix read-only, writes only under the destination and work prefixes', () => {
    const archive = 'arn:<AWS::Partition>:s3:::s3zip-test-uploads/incoming/*';
    const destination = 'arn:<AWS::Partition>:s3:::s3zip-test-uploads/extracted/*';
    for (const name of EXTRACT_FUNCTION_NAMES) {
      for (const s of s3Statements(name)) {
        for (const r of list(s.Resource).map(render)) {
          const actions = list(s.Action);
          if (r === archive) assert.deepEqual(actions, ['s3:GetObject'], `${name} on the archives`);
          else if (r.endsWith('/*')) assert.ok(r === destination || /WorkBucket.*\.Arn>\/s3zip-work\/extract\/\*$/.test(r), `${name}: ${actions} on ${r}`);
          else assert.ok(!actions.some((a) => /Put|Delete|Abort/.test(a)), `${name}: ${actions} on the bucket ${r}`);
          if (actions.includes('s3:ListBucket')) assert.ok(s.Condition?.StringLike?.['s3:prefix'], `${name}: ListBucket without a prefix condition`);
        }
      }
    }
  });

  test('each function only what it calls: the worker deletes nothing, the planner writes only work objects', () => {
    const actions = (name: (typeof EXTRACT_FUNCTION_NAMES)[number]) => new Set(s3Statements(name).flatMap((s) => list(s.Action)));
    assert.ok(!actions('extract-worker').has('s3:DeleteObject'));
    const plannerWrites = s3Statements('extract-planner').filter((s) => list(s.Action).includes('s3:PutObject'));
    assert.equal(plannerWrites.length, 1);
    assert.match(render(plannerWrites[0].Resource), /s3zip-work\/extract\/\*$/);
    assert.ok(actions('extract-abort').has('s3:DeleteObject'));
  });

  test('cdk-nag finds nothing unsuppressed', () => {
    const findings = [
      ...Annotations.fromStack(B.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(B.stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    assert.deepEqual(findings.map((f) => `${f.id}: ${String(f.entry.data).slice(0, 120)}`), []);
  });

  test('overlapping archive and destination prefixes are refused (an extracted .zip would start another run)', () => {
    assert.throws(() => withExtract({ archivePrefix: 'data/', destinationPrefix: 'data/out/' }), /overlap/);
  });
});

describe('extract KMS', () => {
  const archiveKey = 'arn:aws:kms:eu-west-1:123456789012:key/aaaaaaaa-0000-0000-0000-000000000001';
  const destinationKey = 'arn:aws:kms:eu-west-1:123456789012:key/bbbbbbbb-0000-0000-0000-000000000002';
  const kmsGrants = (b: ReturnType<typeof withExtract>, role: string) =>
    statementsOfRole(b.json, role)
      .filter((s) => list(s.Action).some((a) => a.startsWith('kms:')))
      .flatMap((s) => list(s.Resource).map((r) => `${list(s.Action).join('+')} ${render(r)}`))
      .sort();

  test('none without keys', () => {
    for (const name of EXTRACT_FUNCTION_NAMES) assert.deepEqual(kmsGrants(B, roleId(name)), [], name);
  });

  test('the same keys as the archive workflow, each role exactly the keys of what it reads and writes', () => {
    let workKey = '';
    const b = withExtract({ archiveKmsKeyArns: [archiveKey], destinationKmsKeyArn: destinationKey }, (s) => {
      const key = new kms.Key(s, 'WorkKey', { enableKeyRotation: true });
      workKey = `<${s.getLogicalId(key.node.defaultChild as kms.CfnKey)}.Arn>`;
      return { encryptionKey: key };
    });
    const role = (name: (typeof EXTRACT_FUNCTION_NAMES)[number]) => b.stack.getLogicalId(b.extract.functions[name].role!.node.defaultChild as any);
    assert.deepEqual(kmsGrants(b, role('extract-planner')), [`kms:Decrypt ${archiveKey}`, `kms:GenerateDataKey ${workKey}`].sort());
    assert.deepEqual(kmsGrants(b, role('extract-worker')), [`kms:Decrypt ${archiveKey}`, `kms:Decrypt+kms:GenerateDataKey ${destinationKey}`].sort());
    assert.deepEqual(kmsGrants(b, role('extract-finalizer')), [`kms:Decrypt ${workKey}`, `kms:GenerateDataKey ${destinationKey}`].sort());
    assert.deepEqual(kmsGrants(b, role('extract-abort')), [`kms:Decrypt ${workKey}`]);
    const smRole = b.stack.getLogicalId(b.extract.stateMachine.role.node.defaultChild as any);
    assert.deepEqual(kmsGrants(b, smRole), [`kms:Decrypt+kms:GenerateDataKey ${workKey}`]);
  });
});

describe('extract map children', () => {
  test('EXPRESS children with a worker that can outlive them are refused, as in the archive workflow', () => {
    assert.throws(() => withExtract({ mapExecutionType: 'EXPRESS' }), /ExtractWorkflow: EXPRESS.*5 minutes.*worker\.timeout/);
    assert.throws(() => withExtract({ mapExecutionType: 'EXPRESS', worker: { timeout: Duration.minutes(5) } }), /worker\.timeout <= 240s/);
    const b = withExtract({ mapExecutionType: 'EXPRESS', worker: { timeout: Duration.minutes(4) } });
    assert.equal(b.extract.definitionSubstitutions.MapExecutionType, 'EXPRESS');
  });
});

describe('extract trigger', () => {
  const rule = B.json.Resources[B.stack.getLogicalId(B.extract.archiveRule.node.defaultChild as any)].Properties!;

  test('ZIPs created under incoming/ in the archive bucket', () => {
    assert.deepEqual(rule.EventPattern, {
      source: ['aws.s3'],
      'detail-type': ['Object Created'],
      detail: { bucket: { name: ['s3zip-test-uploads'] }, object: { key: [{ wildcard: 'incoming/*.zip' }] } },
    });
  });

  test('start the extract state machine with the archive only (the planner derives extracted/<name>/)', () => {
    assert.equal(rule.Targets.length, 1);
    assert.deepEqual(rule.Targets[0].Arn, { Ref: smId });
    assert.deepEqual(JSON.parse(rule.Targets[0].InputTransformer.InputTemplate.replace(/<([a-z-]+)>/g, '"$1"')), {
      archive: { bucket: 'detail-bucket-name', key: 'detail-object-key' },
    });
  });

  test('the prefix and suffix are configurable', () => {
    const b = withExtract({ archivePrefix: 'drop', archiveSuffix: '.ZIP', destinationPrefix: 'out/' });
    const r = b.json.Resources[b.stack.getLogicalId(b.extract.archiveRule.node.defaultChild as any)].Properties!;
    assert.deepEqual(r.EventPattern.detail.object.key, [{ wildcard: 'drop/*.ZIP' }]);
    const env = b.json.Resources[b.stack.getLogicalId(b.extract.functions['extract-planner'].node.defaultChild as any)].Properties!.Environment.Variables;
    assert.equal(env.EXTRACT_ARCHIVE_PREFIX, 'drop/');
    assert.equal(env.EXTRACT_DESTINATION_PREFIX, 'out/');
  });
});
