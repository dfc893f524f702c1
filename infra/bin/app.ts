#!/usr/bin/env node
/**
 * The s3zip CDK app: one stack, S3ZipStack, with the archive workflow.
 *
 * Context (all optional, so `cdk synth` works offline with no AWS account):
 *   -c sourceBuckets=a,b  -c sourcePrefix=photos/  -c destinationBucket=d  -c destinationPrefix=archives/
 *   -c partsPerBatch=8  -c maxReadsPerBatch=8  -c pieceSize=67108864  -c defaultMaxConcurrency=100  -c mapExecutionType=STANDARD|EXPRESS
 *   -c functionsDir=/path/to/functions   (default dist/functions, built by `make lambdas`)
 *   -c extractBucket=b  -c extractArchivePrefix=incoming/  -c extractDestinationBucket=b  -c extractDestinationPrefix=extracted/
 *      (the extract workflow: ZIPs created under the archive prefix are extracted into <destination prefix><name>/)
 *   KMS keys (ARNs; each role is granted exactly the keys of the objects it reads or writes):
 *   -c workKmsKeyArn=arn  (the work and control buckets are encrypted with it)
 *   -c sourceKmsKeyArns=arn1,arn2  -c destinationKmsKeyArn=arn  (archives are written with it)
 *   -c extractArchiveKmsKeyArns=arn1,arn2  -c extractDestinationKmsKeyArn=arn  (the extract workflow's)
 *   -c inventoryBuckets=inv,inv2/reports/  (S3 Inventory reports the planner may read: source.inventory; none by default)
 *   -c maxPresignSeconds=86400  (requests may ask for download links in the output, options.presign; none by default)
 *   -c keepFailedRunsDays=7  (a run failed for a cause a retry may mend is kept this long for Redrive; 1 to 14, default 7)
 *   -c monitoring=true  (both workflows: alarms on failed and timed-out runs and throttled functions, a dashboard each)
 */
import { App, Aspects, Stack, type StackProps } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
// The construct library, by its package name as any CDK app imports it (infra/ is the s3zip-cdk
// workspace; tsconfig.json maps the name to lib/index.ts, so synth runs the source, no build).
import { ArchiveWorkflow, addArchiveWorkflowOutputs, addExtractWorkflowOutputs, type ArchiveWorkflowProps, ExtractWorkflow, type ExtractWorkflowProps } from 's3zip-cdk';

export class S3ZipStack extends Stack {
  readonly workflow: ArchiveWorkflow;
  readonly extract?: ExtractWorkflow;

  /** workflowProps.workKmsKeyArn: the work and control buckets' key, imported into this stack (ArchiveWorkflowProps.encryptionKey). */
  constructor(
    scope: Construct,
    id: string,
    workflowProps: Omit<ArchiveWorkflowProps, 'encryptionKey'> & { workKmsKeyArn?: string },
    props?: StackProps,
    extractProps?: Omit<ExtractWorkflowProps, 'workBucket' | 'functionsDir'>,
  ) {
    super(scope, id, { description: 's3zip: many S3 objects into one ZIP in S3, and ZIPs in S3 into objects (Step Functions)', ...props });
    const { workKmsKeyArn, ...archiveProps } = workflowProps;
    this.workflow = new ArchiveWorkflow(this, 'ArchiveWorkflow', {
      ...archiveProps,
      encryptionKey: workKmsKeyArn ? kms.Key.fromKeyArn(this, 'WorkKey', workKmsKeyArn) : undefined,
    });
    addArchiveWorkflowOutputs(this, this.workflow);
    if (extractProps) {
      this.extract = new ExtractWorkflow(this, 'ExtractWorkflow', {
        ...extractProps,
        workBucket: this.workflow.workBucket,
        functionsDir: workflowProps.functionsDir,
      });
      addExtractWorkflowOutputs(this, this.extract);
    }
  }
}

function contextString(app: App, key: string): string | undefined {
  const v = app.node.tryGetContext(key);
  return v === undefined || v === null || v === '' ? undefined : String(v);
}

function contextList(app: App, key: string): string[] | undefined {
  const v = contextString(app, key);
  return v?.split(',').map((x) => x.trim()).filter((x) => x !== '');
}

function contextInt(app: App, key: string): number | undefined {
  const v = contextString(app, key);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new Error(`context ${key} must be an integer, got "${v}"`);
  return n;
}

const app = new App();
const monitoring = contextString(app, 'monitoring') === 'true' ? {} : undefined;
const mapExecutionType = contextString(app, 'mapExecutionType');
if (mapExecutionType !== undefined && mapExecutionType !== 'STANDARD' && mapExecutionType !== 'EXPRESS') {
  throw new Error(`context mapExecutionType must be STANDARD or EXPRESS, got "${mapExecutionType}"`);
}

new S3ZipStack(
  app,
  'S3ZipStack',
  {
    sourceBuckets: contextList(app, 'sourceBuckets') ?? ['s3zip-example-source'],
    sourcePrefix: contextString(app, 'sourcePrefix'),
    destinationBucket: contextString(app, 'destinationBucket') ?? 's3zip-example-destination',
    destinationPrefix: contextString(app, 'destinationPrefix'),
    functionsDir: contextString(app, 'functionsDir'),
    partsPerBatch: contextInt(app, 'partsPerBatch'),
    maxReadsPerBatch: contextInt(app, 'maxReadsPerBatch'),
    pieceSize: contextInt(app, 'pieceSize'),
    defaultMaxConcurrency: contextInt(app, 'defaultMaxConcurrency'),
    mapExecutionType: mapExecutionType as ArchiveWorkflowProps['mapExecutionType'],
    workKmsKeyArn: contextString(app, 'workKmsKeyArn'),
    sourceKmsKeyArns: contextList(app, 'sourceKmsKeyArns'),
    destinationKmsKeyArn: contextString(app, 'destinationKmsKeyArn'),
    inventoryBuckets: contextList(app, 'inventoryBuckets'),
    maxPresignSeconds: contextInt(app, 'maxPresignSeconds'),
    keepFailedRunsDays: contextInt(app, 'keepFailedRunsDays'),
    monitoring,
  },
  {
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  },
  {
    archiveBucket: contextString(app, 'extractBucket') ?? 's3zip-example-incoming',
    archivePrefix: contextString(app, 'extractArchivePrefix'),
    destinationBucket: contextString(app, 'extractDestinationBucket'),
    destinationPrefix: contextString(app, 'extractDestinationPrefix'),
    mapExecutionType: mapExecutionType as ExtractWorkflowProps['mapExecutionType'],
    archiveKmsKeyArns: contextList(app, 'extractArchiveKmsKeyArns'),
    destinationKmsKeyArn: contextString(app, 'extractDestinationKmsKeyArn'),
    monitoring,
  },
);

Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
