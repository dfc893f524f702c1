/**
 * infra/bin/standalone.ts: the synthesized template turned into the standalone one. The whole
 * template is deployed by tests/deployed (standalone_test.go); these are the refusals, on small
 * hand-written templates.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PLACEHOLDERS, standaloneTemplate, type TemplateJson } from '../../infra/bin/standalone';

const NO_ASSETS = { functions: {}, definitions: {} };

function policy(statements: TemplateJson[]): TemplateJson {
  return { Resources: { P: { Type: 'AWS::IAM::Policy', Properties: { PolicyDocument: { Statement: statements } } } } };
}

const [slot1, slot2] = PLACEHOLDERS.sourceBuckets;

describe('standalone template', () => {
  test('each placeholder becomes its parameter; a source slot after the first exists only when named', () => {
    const t = standaloneTemplate(
      policy([{ Sid: 'Read', Action: 's3:GetObject', Resource: [`arn:aws:s3:::${slot1}/${PLACEHOLDERS.sourcePrefix}*`, `arn:aws:s3:::${slot2}/${PLACEHOLDERS.sourcePrefix}*`] }]),
      NO_ASSETS,
      {},
      'd',
    );
    const [first, second] = t.Resources.P.Properties.PolicyDocument.Statement[0].Resource;
    assert.deepEqual(first, { 'Fn::Sub': ['arn:aws:s3:::${SourceBucket1}/${SourcePrefix}*', { SourceBucket1: { 'Fn::Select': [0, { 'Fn::Split': [',', { 'Fn::Sub': '${SourceBuckets},,,,' }] }] } }] });
    assert.equal(second['Fn::If'][0], 'HasSourceBucket2');
    assert.deepEqual(second['Fn::If'][2], { Ref: 'AWS::NoValue' });
  });

  test('a statement on the KMS key exists only with a key; an env value that is the key is its Ref', () => {
    const t = standaloneTemplate(
      {
        Resources: {
          ...policy([{ Sid: 'Logs', Action: 'logs:PutLogEvents', Resource: '*' }, { Sid: 'Key', Action: 'kms:Decrypt', Resource: PLACEHOLDERS.kmsKeyArn }]).Resources,
          F: { Type: 'AWS::Lambda::Function', Properties: { Environment: { Variables: { DESTINATION_KMS_KEY_ARN: PLACEHOLDERS.kmsKeyArn } } } },
        },
      },
      NO_ASSETS,
      {},
      'd',
    );
    const [logs, key] = t.Resources.P.Properties.PolicyDocument.Statement;
    assert.equal(logs.Sid, 'Logs');
    assert.deepEqual(key, { 'Fn::If': ['HasKmsKey', { Sid: 'Key', Action: 'kms:Decrypt', Resource: { Ref: 'KmsKeyArn' } }, { Ref: 'AWS::NoValue' }] });
    assert.deepEqual(t.Resources.F.Properties.Environment.Variables.DESTINATION_KMS_KEY_ARN, { Ref: 'KmsKeyArn' });
  });

  const refusals: [string, () => unknown, RegExp][] = [
    [
      'a policy of KMS statements alone (empty without a key)',
      () => standaloneTemplate(policy([{ Sid: 'Key', Action: 'kms:Decrypt', Resource: PLACEHOLDERS.kmsKeyArn }]), NO_ASSETS, {}, 'd'),
      /a policy whose every statement is on the KMS key would be empty without one/,
    ],
    [
      'a statement naming only the second source bucket',
      () => standaloneTemplate(policy([{ Sid: 'Two', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${slot2}` }]), NO_ASSETS, {}, 'd'),
      /statement Two names only a source bucket of slot 2/,
    ],
    [
      'a bootstrap reference left',
      () => standaloneTemplate({ Resources: { F: { Type: 'AWS::Lambda::Function', Properties: { Code: { S3Bucket: 'cdk-hnb659fds-assets-1-r' } } } } }, NO_ASSETS, {}, 'd'),
      /Resources F still holds cdk-hnb659fds \(a placeholder or CDK's bootstrap\)/,
    ],
    [
      'a function whose code is not where the generator puts it',
      () => standaloneTemplate({ Resources: {} }, { functions: { Missing: 'functions/planner' }, definitions: {} }, {}, 'd'),
      /resource Missing has no Code to point at functions\/planner/,
    ],
    [
      'ALLOWED_SOURCE_BUCKETS other than every slot',
      () => standaloneTemplate({ Resources: { F: { Type: 'AWS::Lambda::Function', Properties: { Environment: { Variables: { ALLOWED_SOURCE_BUCKETS: slot1 } } } } } }, NO_ASSETS, {}, 'd'),
      /ALLOWED_SOURCE_BUCKETS is "s3zip-param-sourcebucket1", not the placeholders joined/,
    ],
  ];
  for (const [name, fn, want] of refusals) {
    test(`refused: ${name}`, () => assert.throws(fn, want));
  }
});
