/**
 * infra/bin/app.ts as the CDK CLI runs it: `cdk synth` offline, with no AWS credentials,
 * context from -c flags, cdk-nag applied to the whole app.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { REPO_ROOT, functionsDir, tempDir, identityStatements, list, render, resourcesOfType } from './helpers';

/** The environment of a machine with no AWS account: every AWS_* variable removed. */
function offlineEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_') && !k.startsWith('CDK_')) env[k] = v;
  return {
    ...env,
    CDK_DISABLE_VERSION_CHECK: '1',
    AWS_EC2_METADATA_DISABLED: 'true',
    // Credential lookups must find nothing rather than a developer's own profile.
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_CONFIG_FILE: '/dev/null',
  };
}

const key = (n: number) => `arn:aws:kms:eu-west-1:123456789012:key/00000000-0000-4000-8000-00000000000${n}`;
const KEYS = { work: key(1), source: key(2), source2: key(3), destination: key(4), archive: key(5), extracted: key(6) };

describe('cdk synth (CLI, offline)', () => {
  const out = tempDir('s3zip-cdk-synth-');
  const cli = path.join(REPO_ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');
  const run = spawnSync(
    process.execPath,
    [
      cli,
      'synth',
      '--quiet',
      '--no-notices',
      '-o',
      out,
      '-c',
      `functionsDir=${functionsDir()}`,
      '-c',
      'sourceBuckets=s3zip-cli-a, s3zip-cli-b',
      '-c',
      'sourcePrefix=in/',
      '-c',
      'destinationBucket=s3zip-cli-dst',
      '-c',
      'destinationPrefix=zips/',
      '-c',
      'partsPerBatch=5',
      '-c',
      `workKmsKeyArn=${KEYS.work}`,
      '-c',
      `sourceKmsKeyArns=${KEYS.source}, ${KEYS.source2}`,
      '-c',
      `destinationKmsKeyArn=${KEYS.destination}`,
      '-c',
      `extractArchiveKmsKeyArns=${KEYS.archive}`,
      '-c',
      `extractDestinationKmsKeyArn=${KEYS.extracted}`,
    ],
    { cwd: REPO_ROOT, env: offlineEnv(), encoding: 'utf8', timeout: 180_000 },
  );

  test('exits 0 with no nag errors', () => {
    assert.equal(run.status, 0, `cdk synth failed:\n${run.stdout}\n${run.stderr}`);
    assert.doesNotMatch(`${run.stdout}\n${run.stderr}`, /AwsSolutions-\S+.*(ERROR|Error)|\[Error at /);
  });

  test('S3ZipStack reflects the -c context', () => {
    const template = JSON.parse(fs.readFileSync(path.join(out, 'S3ZipStack.template.json'), 'utf8'));
    // The archive workflow's five; the extract workflow's four are tested in extract.test.ts.
    const fns = resourcesOfType(template, 'AWS::Lambda::Function').filter(([id]) => !id.startsWith('ExtractWorkflow'));
    assert.equal(fns.length, 5);
    assert.equal(resourcesOfType(template, 'AWS::Lambda::Function').length, 9);
    for (const [, fn] of fns) {
      assert.equal(fn.Properties!.Environment.Variables.ALLOWED_SOURCE_BUCKETS, 's3zip-cli-a,s3zip-cli-b');
      assert.equal(fn.Properties!.Environment.Variables.ALLOWED_DESTINATIONS, 's3zip-cli-dst/zips/');
      // The planner writes it into the job; the ASL's MaxItemsPerBatchPath reads it there.
      assert.equal(fn.Properties!.Environment.Variables.PARTS_PER_BATCH, '5');
    }
    const s3Resources = identityStatements(template)
      .filter(({ statement }) => list(statement.Action).some((a) => a.startsWith('s3:')))
      .flatMap(({ statement }) => list(statement.Resource).map(render));
    assert.ok(s3Resources.includes('arn:<AWS::Partition>:s3:::s3zip-cli-b/in/*'));
    assert.ok(s3Resources.includes('arn:<AWS::Partition>:s3:::s3zip-cli-dst/zips/*'));
    assert.deepEqual(Object.keys(template.Outputs).sort(), ['ControlBucketName', 'ExtractStateMachineArn', 'StateMachineArn', 'WorkBucketName']);
  });

  test('the KMS context values reach both workflows: the work buckets are encrypted, each role holds its keys', () => {
    const template = JSON.parse(fs.readFileSync(path.join(out, 'S3ZipStack.template.json'), 'utf8'));
    const buckets = resourcesOfType(template, 'AWS::S3::Bucket').filter(([id]) => /WorkBucket|ControlBucket/.test(id));
    assert.equal(buckets.length, 2);
    for (const [id, b] of buckets) {
      assert.deepEqual(b.Properties!.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault, { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: KEYS.work }, id);
    }
    const grants = new Map<string, Set<string>>(); // key → "<role> <action>"
    for (const { roles, statement } of identityStatements(template)) {
      for (const a of list(statement.Action).filter((x) => x.startsWith('kms:'))) {
        for (const r of list(statement.Resource).map(render)) {
          assert.ok(Object.values(KEYS).includes(r), `${a} on ${r}: not a configured key`);
          for (const role of roles) grants.set(r, (grants.get(r) ?? new Set()).add(`${role} ${a}`));
        }
      }
    }
    const has = (k: string, role: RegExp, action: string) => [...(grants.get(k) ?? [])].some((g) => role.test(g) && g.endsWith(` ${action}`));
    for (const k of [KEYS.source, KEYS.source2]) assert.ok(has(k, /^ArchiveWorkflowWorkerRole/, 'kms:Decrypt'), `worker decrypts ${k}`);
    assert.ok(has(KEYS.destination, /^ArchiveWorkflowPlannerRole/, 'kms:GenerateDataKey'));
    assert.ok(has(KEYS.work, /^ExtractWorkflowExtractPlannerRole/, 'kms:GenerateDataKey'));
    assert.ok(has(KEYS.archive, /^ExtractWorkflowExtractWorkerRole/, 'kms:Decrypt'));
    assert.ok(has(KEYS.extracted, /^ExtractWorkflowExtractWorkerRole/, 'kms:GenerateDataKey'));
  });

  test('the nag report was written and every row is compliant or suppressed', () => {
    const name = fs.readdirSync(out).find((f) => /^AwsSolutions-.*S3ZipStack-NagReport\.csv$/.test(f));
    assert.ok(name, 'cdk-nag ran over the app and wrote its report');
    const rows = fs.readFileSync(path.join(out, name), 'utf8').trim().split('\n').slice(1);
    assert.ok(rows.length > 10, `${rows.length} rows`);
    const compliance = (row: string) => row.split('","')[2];
    assert.deepEqual(rows.filter((r) => !['Compliant', 'Suppressed'].includes(compliance(r))), []);
    assert.ok(rows.some((r) => compliance(r) === 'Compliant'));
  });
});
