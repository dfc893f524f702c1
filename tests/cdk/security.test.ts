/**
 * Security properties of the ArchiveWorkflow construct that stack.test.ts does not already pin:
 * the allow-lists the Go handlers enforce come from the deployment and agree with IAM, writes
 * land only under the destination and work prefixes, the finalizer may read the archive's tail
 * from the sources, the planner can tell a missing destination (404) from a forbidden one (403),
 * and cdk-nag passes in every supported configuration, not only the default one.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { FUNCTION_NAMES } from '../../infra/lib/archive-grants';
import {
  DESTINATION_BUCKET,
  SOURCE_BUCKETS,
  build,
  identityStatements,
  list,
  logicalId,
  render,
  statementsOfRole,
  type Built,
  type Statement,
} from './helpers';

const PREFIXED = build({ sourcePrefix: 'photos/', destinationPrefix: 'archives/' });
const WHOLE = build({});
// Prefixes without the trailing slash are normalized: env and IAM must agree on the same form.
const UNNORMALIZED = build({ sourcePrefix: '/photos', destinationPrefix: 'archives' }, { nag: false });

const READ_ACTIONS = new Set(['s3:GetObject', 's3:GetObjectVersion', 's3:GetObjectAttributes', 's3:ListBucket']);
const WRITE_ACTIONS = new Set([
  's3:PutObject',
  's3:DeleteObject',
  's3:DeleteObjectVersion',
  's3:AbortMultipartUpload',
  's3:PutObjectTagging',
  's3:PutObjectAcl',
  's3:RestoreObject',
]);

function roleIds(b: Built): Record<string, string> {
  return Object.fromEntries(FUNCTION_NAMES.map((n) => [n, logicalId(b.stack, b.workflow.functions[n].role as any)]));
}

function env(b: Built, name: string): Record<string, unknown> {
  return b.json.Resources[logicalId(b.stack, b.workflow.functions[name as 'planner'])].Properties!.Environment.Variables;
}

function actionsOn(statements: Statement[], resource: string): string[] {
  const out = new Set<string>();
  for (const s of statements) {
    if (s.Effect === 'Allow' && list(s.Resource).map(render).includes(resource)) list(s.Action).forEach((a) => out.add(a));
  }
  return [...out].sort();
}

/** The object ARNs the allow-list env of a function permits, in IAM's notation. */
function allowListObjectArns(e: Record<string, unknown>): { sources: string[]; destinations: string[] } {
  const prefix = (e.ALLOWED_SOURCE_PREFIX as string | undefined) ?? '';
  const sources = String(e.ALLOWED_SOURCE_BUCKETS)
    .split(',')
    .map((b) => `arn:<AWS::Partition>:s3:::${b}/${prefix}*`);
  const destinations = String(e.ALLOWED_DESTINATIONS)
    .split(',')
    .map((d) => `arn:<AWS::Partition>:s3:::${d}*`);
  return { sources, destinations };
}

describe('allow-lists: set from the deployment, the same for every function, and agreeing with IAM', () => {
  for (const [label, b, sourcePrefix, destinationPrefix] of [
    ['prefixed', PREFIXED, 'photos/', 'archives/'],
    ['whole buckets', WHOLE, '', ''],
    ['unnormalized prefixes', UNNORMALIZED, 'photos/', 'archives/'],
  ] as const) {
    test(`${label}: ALLOWED_* and CONTROL_BUCKET env`, () => {
      for (const name of FUNCTION_NAMES) {
        const e = env(b, name);
        assert.equal(e.ALLOWED_SOURCE_BUCKETS, SOURCE_BUCKETS.join(','), name);
        if (sourcePrefix === '') {
          // Absent, not empty: an empty value must never be read as "a prefix was configured".
          assert.ok(!('ALLOWED_SOURCE_PREFIX' in e), `${name}: ALLOWED_SOURCE_PREFIX set without a sourcePrefix`);
        } else {
          assert.equal(e.ALLOWED_SOURCE_PREFIX, sourcePrefix, name);
        }
        assert.equal(e.ALLOWED_DESTINATIONS, `${DESTINATION_BUCKET}/${destinationPrefix}`, name);
        assert.deepEqual(e.CONTROL_BUCKET, { Ref: logicalId(b.stack, b.workflow.controlBucket) }, name);
        // "*" would switch the Go allow-list off (splitList drops it); it must never be deployed.
        for (const v of [e.ALLOWED_SOURCE_BUCKETS, e.ALLOWED_DESTINATIONS]) assert.ok(!String(v).includes('*'), `${name}: ${v}`);
      }
    });

    test(`${label}: IAM grants source reads and destination writes exactly where the allow-lists point`, () => {
      const roles = roleIds(b);
      const { sources, destinations } = allowListObjectArns(env(b, 'planner'));
      for (const name of FUNCTION_NAMES) {
        for (const s of statementsOfRole(b.json, roles[name])) {
          if (!list(s.Action).some((a) => a.startsWith('s3:'))) continue;
          for (const r of list(s.Resource).map(render)) {
            const isSource = SOURCE_BUCKETS.some((bk) => r.startsWith(`arn:<AWS::Partition>:s3:::${bk}/`));
            const isDestination = r.startsWith(`arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}/`);
            if (isSource) assert.ok(sources.includes(r), `${name}: source object ARN ${r} outside ${sources}`);
            if (isDestination) assert.ok(destinations.includes(r), `${name}: destination object ARN ${r} outside ${destinations}`);
          }
        }
      }
    });
  }

  test('the EventBridge route cannot widen them: the rule passes only the request object location', () => {
    const rule = Object.values(PREFIXED.json.Resources).find((r) => r.Type === 'AWS::Events::Rule')!;
    const t = rule.Properties!.Targets[0];
    assert.equal(t.Input, undefined);
    assert.deepEqual(Object.keys(t.InputTransformer.InputPathsMap).length, 2);
    const template = String(t.InputTransformer.InputTemplate);
    for (const field of ['source', 'destination', 'options', 'manifest']) {
      assert.ok(!template.includes(`"${field}"`), `the rule input sets ${field}`);
    }
  });
});

describe('IAM: sources read-only, writes only under the destination and work prefixes', () => {
  for (const [label, b, destinationPrefix] of [
    ['prefixed', PREFIXED, 'archives/'],
    ['whole buckets', WHOLE, ''],
  ] as const) {
    test(`${label}: no role writes anywhere else`, () => {
      const work = `<${logicalId(b.stack, b.workflow.workBucket)}.Arn>/s3zip-work/*`;
      const destination = `arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}/${destinationPrefix}*`;
      for (const { policy, statement } of identityStatements(b.json)) {
        const writes = list(statement.Action).filter((a) => WRITE_ACTIONS.has(a));
        if (writes.length === 0) continue;
        for (const r of list(statement.Resource).map(render)) {
          assert.ok(r === work || r === destination, `${policy}: ${writes.join(',')} on ${r}`);
        }
      }
    });

    test(`${label}: every statement on a source bucket is a read, for every role`, () => {
      for (const { policy, statement } of identityStatements(b.json)) {
        const resources = list(statement.Resource).map(render);
        if (!resources.some((r) => SOURCE_BUCKETS.some((bk) => r.startsWith(`arn:<AWS::Partition>:s3:::${bk}`)))) continue;
        for (const a of list(statement.Action)) assert.ok(READ_ACTIONS.has(a), `${policy}: ${a} on a source`);
        // A statement on a source never also grants something elsewhere (reads stay scoped).
        for (const r of resources) assert.ok(SOURCE_BUCKETS.some((bk) => r.startsWith(`arn:<AWS::Partition>:s3:::${bk}`)), r);
      }
    });
  }

  test('the finalizer reads source objects (the archive tail) with GetObject/GetObjectVersion only', () => {
    const roles = roleIds(PREFIXED);
    const st = statementsOfRole(PREFIXED.json, roles.finalizer);
    for (const bk of SOURCE_BUCKETS) {
      assert.deepEqual(actionsOn(st, `arn:<AWS::Partition>:s3:::${bk}/photos/*`), ['s3:GetObject', 's3:GetObjectVersion'], bk);
      assert.deepEqual(actionsOn(st, `arn:<AWS::Partition>:s3:::${bk}`), [], `${bk}: the finalizer does not list sources`);
    }
    const whole = statementsOfRole(WHOLE.json, roleIds(WHOLE).finalizer);
    for (const bk of SOURCE_BUCKETS) {
      assert.deepEqual(actionsOn(whole, `arn:<AWS::Partition>:s3:::${bk}/*`), ['s3:GetObject', 's3:GetObjectVersion'], bk);
    }
  });

  test('the abort function touches no source', () => {
    const st = statementsOfRole(PREFIXED.json, roleIds(PREFIXED).abort);
    const text = JSON.stringify(st);
    for (const bk of SOURCE_BUCKETS) assert.ok(!text.includes(bk), `abort mentions ${bk}`);
  });

  test('the planner lists the sources and reads none of them (the reader looks them up)', () => {
    const st = statementsOfRole(PREFIXED.json, roleIds(PREFIXED).planner);
    for (const bk of SOURCE_BUCKETS) {
      const objects = `arn:<AWS::Partition>:s3:::${bk}/photos/*`;
      assert.deepEqual(actionsOn(st, objects), [], `the planner may act on ${objects}`);
      assert.deepEqual(actionsOn(st, `arn:<AWS::Partition>:s3:::${bk}`), ['s3:ListBucket'], `the planner on bucket ${bk}`);
    }
    const reader = statementsOfRole(PREFIXED.json, roleIds(PREFIXED).reader);
    assert.ok(actionsOn(reader, `arn:<AWS::Partition>:s3:::${SOURCE_BUCKETS[0]}/photos/*`).includes('s3:GetObject'), 'the reader HEADs and reads sources');
  });

  test('the planner may list the destination prefix, so HeadObject on a missing archive is 404, not 403', () => {
    const find = (b: Built) =>
      statementsOfRole(b.json, roleIds(b).planner).filter(
        (s) => list(s.Action).includes('s3:ListBucket') && list(s.Resource).map(render).includes(`arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}`),
      );
    const prefixed = find(PREFIXED);
    assert.equal(prefixed.length, 1);
    assert.deepEqual(list(prefixed[0].Action), ['s3:ListBucket']);
    assert.deepEqual(prefixed[0].Condition, { StringLike: { 's3:prefix': ['archives/*'] } });
    const dest = `arn:<AWS::Partition>:s3:::${DESTINATION_BUCKET}/archives/*`;
    assert.ok(actionsOn(statementsOfRole(PREFIXED.json, roleIds(PREFIXED).planner), dest).includes('s3:GetObject'), 'HeadObject needs GetObject');
    // A whole-bucket destination lists the bucket it may write to, nothing more.
    const whole = find(WHOLE);
    assert.equal(whole.length, 1);
    assert.deepEqual(list(whole[0].Action), ['s3:ListBucket']);
  });

  test('KMS: none without keys; with keys, only on those keys and never kms:*', () => {
    for (const b of [PREFIXED, WHOLE]) {
      assert.equal(identityStatements(b.json).filter(({ statement }) => list(statement.Action).some((a) => a.startsWith('kms:'))).length, 0);
    }
    let key: kms.Key | undefined;
    const sourceKey = 'arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555';
    const b = build(
      (s) => {
        key = new kms.Key(s, 'WorkKey', { enableKeyRotation: true });
        return { encryptionKey: key, sourceKmsKeyArns: [sourceKey] };
      },
      { nag: false },
    );
    const keyArn = `<${b.stack.getLogicalId(key!.node.defaultChild as kms.CfnKey)}.Arn>`;
    const roles = roleIds(b);
    for (const { policy, roles: r, statement } of identityStatements(b.json)) {
      const actions = list(statement.Action).filter((a) => a.startsWith('kms:'));
      if (actions.length === 0) continue;
      for (const a of actions) assert.ok(['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'].includes(a), `${policy}: ${a}`);
      const resources = list(statement.Resource).map(render);
      assert.ok(resources.every((x) => x === keyArn || x === sourceKey), `${policy}: ${resources}`);
      if (resources.includes(sourceKey)) {
        assert.deepEqual(actions, ['kms:Decrypt'], `${policy}: source keys are decrypt-only`);
        assert.ok(!r.includes(roles.abort), 'abort never decrypts sources');
      }
    }
  });
});

describe('inventory reports (source.inventory)', () => {
  const inventoryGrants = (b: Built) =>
    FUNCTION_NAMES.flatMap((name) =>
      statementsOfRole(b.json, roleIds(b)[name])
        .filter((s) => list(s.Resource).map(render).some((r) => r.startsWith('arn:<AWS::Partition>:s3:::s3zip-test-inventory')))
        .map((s) => ({ name, s })),
    );

  test('no grant unless inventoryBuckets is configured', () => {
    for (const b of [PREFIXED, WHOLE]) {
      assert.deepEqual(inventoryGrants(b), []);
      const sids = identityStatements(b.json).map(({ statement }) => statement.Sid);
      assert.ok(!sids.includes('InventoryReportsRead'), 'an inventory grant without inventoryBuckets');
    }
  });

  test('configured: the planner alone may GetObject there, under each prefix given, and cdk-nag stays clean', () => {
    const b = build({ inventoryBuckets: ['s3zip-test-inventory', 's3zip-test-inventory2/reports/photos/'] });
    const grants = inventoryGrants(b);
    assert.deepEqual(
      grants.map(({ name }) => name),
      ['planner'],
    );
    const { s } = grants[0];
    assert.deepEqual(list(s.Action), ['s3:GetObject']);
    assert.deepEqual(list(s.Resource).map(render), [
      'arn:<AWS::Partition>:s3:::s3zip-test-inventory/*',
      'arn:<AWS::Partition>:s3:::s3zip-test-inventory2/reports/photos/*',
    ]);
    const findings = [
      ...Annotations.fromStack(b.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(b.stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    assert.deepEqual(findings.map((f) => `${f.id}: ${String(f.entry.data).slice(0, 160)}`), []);
  });

  test('an entry that is not "bucket" or "bucket/prefix" is refused at synth', () => {
    assert.throws(() => build({ inventoryBuckets: ['s3zip-test-inventory/*'] }, { nag: false }), /inventoryBuckets entry "s3zip-test-inventory\/\*"/);
  });
});

describe('encryption at rest', () => {
  test('with a KMS key: work and control buckets use it with a bucket key; access logs stay SSE-S3', () => {
    let key: kms.Key | undefined;
    const b = build((s) => {
      key = new kms.Key(s, 'WorkKey', { enableKeyRotation: true });
      return { encryptionKey: key };
    });
    const keyId = b.stack.getLogicalId(key!.node.defaultChild as kms.CfnKey);
    for (const bucket of [b.workflow.workBucket, b.workflow.controlBucket]) {
      const rule = b.json.Resources[logicalId(b.stack, bucket)].Properties!.BucketEncryption.ServerSideEncryptionConfiguration[0];
      assert.deepEqual(rule.ServerSideEncryptionByDefault, { SSEAlgorithm: 'aws:kms', KMSMasterKeyID: { 'Fn::GetAtt': [keyId, 'Arn'] } });
      assert.equal(rule.BucketKeyEnabled, true);
    }
    const logs = b.json.Resources[logicalId(b.stack, b.workflow.accessLogsBucket)].Properties!.BucketEncryption;
    assert.equal(logs.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm, 'AES256');
    // cdk-nag is clean in this configuration too.
    const findings = [
      ...Annotations.fromStack(b.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(b.stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    assert.deepEqual(findings.map((f) => `${f.id}: ${String(f.entry.data).slice(0, 160)}`), []);
  });

  test('the work bucket denies non-TLS requests for the bucket and every object', () => {
    const id = logicalId(PREFIXED.stack, PREFIXED.workflow.workBucket);
    const policy = Object.values(PREFIXED.json.Resources).find((r) => r.Type === 'AWS::S3::BucketPolicy' && r.Properties!.Bucket.Ref === id)!;
    const deny = list<any>(policy.Properties!.PolicyDocument.Statement).find((s) => s.Effect === 'Deny');
    assert.deepEqual(deny.Principal, { AWS: '*' });
    assert.deepEqual(list(deny.Action), ['s3:*']);
    assert.deepEqual(list(deny.Resource).map(render).sort(), [`<${id}.Arn>`, `<${id}.Arn>/*`]);
  });
});

describe('cdk-nag in other configurations', () => {
  test('whole-bucket sources and destination: no unsuppressed findings', () => {
    const findings = [
      ...Annotations.fromStack(WHOLE.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(WHOLE.stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    assert.deepEqual(findings.map((f) => `${f.id}: ${String(f.entry.data).slice(0, 160)}`), []);
  });

  test('every IAM5 suppression on a function role names only resources that role really has', () => {
    let checked = 0;
    for (const b of [PREFIXED, WHOLE]) {
      const roles = roleIds(b);
      for (const name of FUNCTION_NAMES) {
        const role = b.json.Resources[roles[name]];
        const resources = new Set(statementsOfRole(b.json, roles[name]).flatMap((s) => list(s.Resource).map(render)));
        for (const rule of list<any>(role.Metadata?.cdk_nag?.rules_to_suppress)) {
          if (rule.id !== 'AwsSolutions-IAM5') continue;
          for (const a of list<any>(rule.applies_to)) {
            if (typeof a !== 'string') continue;
            const r = a.replace(/^Resource::/, '');
            assert.ok(resources.has(r), `${name}: suppression for ${r}, which the role does not have (a stale, too-broad suppression)`);
            checked++;
          }
        }
      }
    }
    assert.ok(checked >= 16, `checked ${checked} suppressed findings`);
  });
});
