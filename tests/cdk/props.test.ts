/**
 * Props are checked at synth: a prop that would deploy a workflow that cannot run fails with the
 * construct's name, the prop, what was wrong and what to give instead.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { ArchiveWorkflow, type ArchiveWorkflowProps, addArchiveWorkflowOutputs, addExtractWorkflowOutputs, ExtractWorkflow, type ExtractWorkflowProps } from 's3zip-cdk';
import { DESTINATION_BUCKET, functionsDir, SOURCE_BUCKETS } from './helpers';

function archive(props: Partial<ArchiveWorkflowProps>): void {
  const stack = new Stack(new App(), 'PropsStack');
  new ArchiveWorkflow(stack, 'ArchiveWorkflow', { sourceBuckets: SOURCE_BUCKETS, destinationBucket: DESTINATION_BUCKET, functionsDir: functionsDir(), ...props });
}

function extract(props: Partial<ExtractWorkflowProps>): void {
  const stack = new Stack(new App(), 'PropsStack');
  const workBucket = new s3.Bucket(stack, 'Work');
  new ExtractWorkflow(stack, 'ExtractWorkflow', { archiveBucket: 's3zip-test-uploads', workBucket, functionsDir: functionsDir(), ...props });
}

describe('props checked at synth', () => {
  const refusals: [string, () => void, RegExp][] = [
    ['no source bucket', () => archive({ sourceBuckets: [] }), /ArchiveWorkflow: sourceBuckets must name at least one bucket/],
    ['an s3:// URL for a bucket', () => archive({ destinationBucket: 's3://out/zips' }), /ArchiveWorkflow: "s3:\/\/out\/zips" is not a bucket name; give sourceBuckets and destinationBucket as bare names .* key prefixes in sourcePrefix \/ destinationPrefix/],
    ['a bucket with a key', () => archive({ sourceBuckets: ['photos/2024'] }), /"photos\/2024" is not a bucket name/],
    ['an empty work prefix', () => archive({ workPrefix: '' }), /ArchiveWorkflow: workPrefix must not be empty; leave it unset for 's3zip-work\/'/],
    ['partsPerBatch 0', () => archive({ partsPerBatch: 0 }), /ArchiveWorkflow: partsPerBatch must be a positive integer, got 0/],
    ['workExpirationDays 1.5', () => archive({ workExpirationDays: 1.5 }), /workExpirationDays must be a positive integer, got 1.5/],
    ['keepFailedRunsDays over 14', () => archive({ keepFailedRunsDays: 15 }), /keepFailedRunsDays must be a whole number of days from 1 to 14 \(Step Functions redrives an execution for 14 days\), got 15/],
    ['keepFailedRunsDays 0', () => archive({ keepFailedRunsDays: 0 }), /keepFailedRunsDays must be a whole number of days from 1 to 14/],
    ['maxPresignSeconds over 7 days', () => archive({ maxPresignSeconds: 604801 }), /maxPresignSeconds must be a whole number of seconds from 1 to 604800/],
    ['a worker of 64 MB', () => archive({ worker: { memorySize: 64 } }), /ArchiveWorkflow: worker\.memorySize must be a whole number of MB from 128 to 10240 \(Lambda's range\), got 64/],
    ['a planner timeout of 20 minutes', () => archive({ planner: { timeout: Duration.minutes(20) } }), /planner\.timeout must be from 1 second to 15 minutes \(Lambda's limit\), got 1200s/],
    ['defaultMaxConcurrency 0', () => archive({ defaultMaxConcurrency: 0 }), /defaultMaxConcurrency must be a whole number from 1 to 10000 \(a Distributed Map's limit\), got 0/],
    ['mapExecutionType in lower case', () => archive({ mapExecutionType: 'express' as never }), /mapExecutionType must be 'STANDARD' or 'EXPRESS', got "express"/],
    ['EXPRESS with 15-minute workers', () => archive({ mapExecutionType: 'EXPRESS' }), /EXPRESS map children end after 5 minutes including retries; set worker\.timeout <= 240s or use mapExecutionType STANDARD/],
    ['a state machine name with a space', () => archive({ stateMachineName: 'my zips' }), /stateMachineName must be 1 to 80 characters without spaces .*got "my zips"/],
    ['an ARN for the archive bucket', () => extract({ archiveBucket: 'arn:aws:s3:::in' }), /ExtractWorkflow: archiveBucket "arn:aws:s3:::in" is not a bucket name/],
    ['overlapping prefixes', () => extract({ archivePrefix: 'data/', destinationPrefix: 'data/out/' }), /archivePrefix data\/ and destinationPrefix data\/out\/ overlap/],
    ['batchSize 0', () => extract({ batchSize: 0 }), /ExtractWorkflow: batchSize must be a positive integer, got 0/],
    ['an extract finalizer of 20,000 MB', () => extract({ finalizer: { memorySize: 20000 } }), /ExtractWorkflow: finalizer\.memorySize must be a whole number of MB from 128 to 10240/],
    ['a functionsDir without the binaries', () => archive({ functionsDir: '/nonexistent' }), /ArchiveWorkflow: \/nonexistent\/planner\/bootstrap not found; functionsDir must hold <name>\/bootstrap/],
  ];
  for (const [what, make, message] of refusals) {
    test(`refused: ${what}`, () => assert.throws(make, message));
  }

  test('accepted: the same constructs with sound props, bucket names given as tokens too', () => {
    archive({ partsPerBatch: 4, maxPresignSeconds: 604800, worker: { memorySize: 3008, timeout: Duration.minutes(4) }, reader: { timeout: Duration.minutes(4) }, mapExecutionType: 'EXPRESS' });
    const stack = new Stack(new App(), 'TokenStack');
    const destination = new s3.Bucket(stack, 'Destination');
    new ArchiveWorkflow(stack, 'ArchiveWorkflow', { sourceBuckets: SOURCE_BUCKETS, destinationBucket: destination.bucketName, functionsDir: functionsDir() });
    extract({ destinationBucket: 's3zip-test-out', destinationPrefix: 'data/' });
  });
});

describe('keepFailedRunsDays', () => {
  // What nobody redrives is removed by the work bucket's rules a day after the keep time.
  const workRules = (props: Partial<ArchiveWorkflowProps>) => {
    const stack = new Stack(new App(), 'KeepStack');
    const w = new ArchiveWorkflow(stack, 'ArchiveWorkflow', { sourceBuckets: SOURCE_BUCKETS, destinationBucket: DESTINATION_BUCKET, functionsDir: functionsDir(), ...props });
    const json = Template.fromStack(stack).toJSON();
    return { w, rules: json.Resources[stack.getLogicalId(w.workBucket.node.defaultChild as s3.CfnBucket)].Properties.LifecycleConfiguration.Rules as any[] };
  };
  for (const [props, keep, expire] of [[{}, 7, 8], [{ keepFailedRunsDays: 3 }, 3, 4], [{ keepFailedRunsDays: 1, workExpirationDays: 5 }, 1, 5]] as const) {
    test(`${JSON.stringify(props)}: kept ${keep} days, work expires after ${expire}, its uploads are aborted after ${keep + 1}`, () => {
      const { w, rules } = workRules(props);
      assert.equal(w.keepFailedRunsDays, keep);
      assert.equal(rules.find((r) => r.Prefix === 's3zip-work/')?.ExpirationInDays, expire);
      assert.equal(rules.find((r) => r.AbortIncompleteMultipartUpload)?.AbortIncompleteMultipartUpload.DaysAfterInitiation, keep + 1);
    });
  }
});

describe('two workflows in one stack', () => {
  const archiveProps = { sourceBuckets: SOURCE_BUCKETS, destinationBucket: DESTINATION_BUCKET, functionsDir: functionsDir() };

  function extractProps(stack: Stack, id: string): ExtractWorkflowProps {
    return { archiveBucket: 's3zip-test-uploads', workBucket: new s3.Bucket(stack, `${id}Work`), functionsDir: functionsDir() };
  }

  test('refused: two ArchiveWorkflows with the default name, naming both and what to set', () => {
    const stack = new Stack(new App(), 'S');
    new ArchiveWorkflow(stack, 'Photos', archiveProps);
    assert.throws(
      () => new ArchiveWorkflow(stack, 'Videos', archiveProps),
      /ArchiveWorkflow S\/Videos: stateMachineName "S-Archive" is already taken by S\/Photos in stack S \(the name is also the log group \/aws\/vendedlogs\/states\/S-Archive's.*give each workflow in a stack its own stateMachineName, e\.g\. 'S-Videos-Archive'/,
    );
  });

  test('refused: two ExtractWorkflows with the default name', () => {
    const stack = new Stack(new App(), 'S');
    new ExtractWorkflow(stack, 'In', extractProps(stack, 'In'));
    assert.throws(() => new ExtractWorkflow(stack, 'Uploads', extractProps(stack, 'Uploads')), /ExtractWorkflow S\/Uploads: stateMachineName "S-Extract" is already taken by S\/In/);
  });

  test('stack outputs: each workflow its own, with a prefix; without one the second is refused, saying what to give', () => {
    const stack = new Stack(new App(), 'S');
    const photos = new ArchiveWorkflow(stack, 'Photos', archiveProps);
    const videos = new ArchiveWorkflow(stack, 'Videos', { ...archiveProps, stateMachineName: 'S-Videos-Archive' });
    addArchiveWorkflowOutputs(stack, photos);
    assert.throws(
      () => addArchiveWorkflowOutputs(stack, videos),
      /addArchiveWorkflowOutputs\(S\/Videos\): S already has an output StateMachineArn; .* e\.g\. addArchiveWorkflowOutputs\(stack, Videos, 'Videos'\)/,
    );
    addArchiveWorkflowOutputs(stack, videos, 'Videos');
    const outputs = Template.fromStack(stack).toJSON().Outputs as Record<string, unknown>;
    assert.deepEqual(Object.keys(outputs).sort(), [
      'ControlBucketName', 'StateMachineArn', 'VideosControlBucketName', 'VideosStateMachineArn', 'VideosWorkBucketName', 'WorkBucketName',
    ]);
  });

  test('addOutputs, the methods other languages call, add what the functions add', () => {
    const outputsOf = (add: (stack: Stack, zips: ArchiveWorkflow, incoming: ExtractWorkflow) => void) => {
      const stack = new Stack(new App(), 'S');
      const zips = new ArchiveWorkflow(stack, 'Zips', archiveProps);
      add(stack, zips, new ExtractWorkflow(stack, 'Incoming', extractProps(stack, 'Incoming')));
      return Template.fromStack(stack).toJSON().Outputs;
    };
    const byFunctions = outputsOf((stack, zips, incoming) => {
      addArchiveWorkflowOutputs(stack, zips, 'Z');
      addExtractWorkflowOutputs(stack, incoming);
    });
    assert.deepEqual(Object.keys(byFunctions).sort(), ['ExtractStateMachineArn', 'ZControlBucketName', 'ZStateMachineArn', 'ZWorkBucketName']);
    assert.deepEqual(outputsOf((stack, zips, incoming) => {
      zips.addOutputs(stack, 'Z');
      incoming.addOutputs(stack);
    }), byFunctions);
  });

  test('extract stack outputs: beside the archive workflow\'s by default, a second with a prefix; without one the second is refused, saying what to give', () => {
    const stack = new Stack(new App(), 'S');
    const zips = new ArchiveWorkflow(stack, 'Zips', archiveProps);
    const incoming = new ExtractWorkflow(stack, 'Incoming', extractProps(stack, 'Incoming'));
    const uploads = new ExtractWorkflow(stack, 'Uploads', { ...extractProps(stack, 'Uploads'), stateMachineName: 'S-Uploads-Extract' });
    addArchiveWorkflowOutputs(stack, zips);
    addExtractWorkflowOutputs(stack, incoming);
    assert.throws(
      () => addExtractWorkflowOutputs(stack, uploads),
      /addExtractWorkflowOutputs\(S\/Uploads\): S already has an output ExtractStateMachineArn; .* e\.g\. addExtractWorkflowOutputs\(stack, Uploads, 'Uploads'\)/,
    );
    addExtractWorkflowOutputs(stack, uploads, 'Uploads');
    const outputs = Template.fromStack(stack).toJSON().Outputs as Record<string, { Value: unknown }>;
    assert.deepEqual(Object.keys(outputs).sort(), ['ControlBucketName', 'ExtractStateMachineArn', 'StateMachineArn', 'UploadsStateMachineArn', 'WorkBucketName']);
    const logicalId = (wf: ExtractWorkflow) => stack.getLogicalId(wf.stateMachine.node.defaultChild as never);
    assert.deepEqual(outputs.ExtractStateMachineArn.Value, { Ref: logicalId(incoming) });
    assert.deepEqual(outputs.UploadsStateMachineArn.Value, { Ref: logicalId(uploads) });
  });

  test('refused: an ExtractWorkflow given the name an ArchiveWorkflow took', () => {
    const stack = new Stack(new App(), 'S');
    new ArchiveWorkflow(stack, 'Zip', { ...archiveProps, stateMachineName: 'zips' });
    assert.throws(() => new ExtractWorkflow(stack, 'Unzip', { ...extractProps(stack, 'Unzip'), stateMachineName: 'zips' }), /stateMachineName "zips" is already taken by S\/Zip/);
  });

  test('accepted: each with its own name, or in its own stack: a state machine and a log group each', () => {
    const app = new App();
    const stack = new Stack(app, 'S');
    new ArchiveWorkflow(stack, 'Photos', archiveProps);
    new ArchiveWorkflow(stack, 'Videos', { ...archiveProps, stateMachineName: 'S-Videos-Archive' });
    new ExtractWorkflow(stack, 'In', extractProps(stack, 'In'));
    new ArchiveWorkflow(new Stack(app, 'T'), 'Photos', archiveProps);
    const template = Template.fromStack(stack);
    const names = Object.values(template.findResources('AWS::StepFunctions::StateMachine')).map((r) => r.Properties.StateMachineName);
    const logGroups = Object.values(template.findResources('AWS::Logs::LogGroup')).map((r) => r.Properties.LogGroupName).filter((n) => String(n).startsWith('/aws/vendedlogs/states/'));
    assert.deepEqual(names.sort(), ['S-Archive', 'S-Extract', 'S-Videos-Archive']);
    assert.deepEqual(logGroups.sort(), ['/aws/vendedlogs/states/S-Archive', '/aws/vendedlogs/states/S-Extract', '/aws/vendedlogs/states/S-Videos-Archive']);
  });
});
