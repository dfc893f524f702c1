import * as path from 'node:path';
import { ArnFormat, Duration, RemovalPolicy, Size, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { checkMapChildTimeouts, DEFAULT_FUNCTIONS_DIR, type FunctionSizing, goFunction, normalizePrefix } from './archive-workflow';

/**
 * The extract planner's memory: it holds the central directory's entries and the jobs made of them, ~565 MiB a
 * million entries measured (tests/load TestExtractPlannerAtTenMillion: 5,659 MiB at 10 M with no memory limit).
 * infra/README.md, "Sizing, measured".
 */
export const EXTRACT_PLANNER_MEMORY = 6144;

/**
 * The extract planner's /tmp: it spools the jobs there as it encodes them before putting them (~262 bytes an entry
 * as JSON: 2.6 GB at 10 M; extract/planner.go putJobs) — Lambda's default 512 MiB holds ~1.9 M entries.
 */
export const EXTRACT_PLANNER_TMP = Size.mebibytes(4096);

/** statemachine/extract.asl.json: plain JSON, its only placeholders quoted strings. */
export const EXTRACT_ASL_PATH = path.resolve(__dirname, '..', '..', 'statemachine', 'extract.asl.json');

/** The extract workflow's functions, by the directory name of their bootstrap binary. */
export const EXTRACT_FUNCTION_NAMES = ['extract-planner', 'extract-worker', 'extract-finalizer', 'extract-abort'] as const;
export type ExtractFunctionName = (typeof EXTRACT_FUNCTION_NAMES)[number];

export interface ExtractWorkflowProps {
  /** Bucket the archives are read from (imported by name; turn on its EventBridge notifications for the rule). */
  readonly archiveBucket: string;
  /** Archives are read only under this prefix, and new ones here start an execution. @default 'incoming/' */
  readonly archivePrefix?: string;
  /** Only keys ending in this start an execution. @default '.zip' */
  readonly archiveSuffix?: string;
  /** Bucket the objects are written to. @default archiveBucket */
  readonly destinationBucket?: string;
  /** Objects are written only under this prefix; an archive <archivePrefix><name>.zip goes to <destinationPrefix><name>/. @default 'extracted/' */
  readonly destinationPrefix?: string;
  /**
   * Bucket for the jobs and Map results (the archive workflow's work bucket). When it is
   * encrypted with a customer-managed key (`encryptionKey`), the roles that read or write work
   * objects are granted that key.
   */
  readonly workBucket: s3.IBucket;
  /** KMS keys that encrypt the archives (decrypt is granted on exactly these). @default none */
  readonly archiveKmsKeyArns?: string[];
  /**
   * KMS key the destination's objects are encrypted with: the destination bucket's default
   * encryption key (the extract functions send no key of their own). @default none
   */
  readonly destinationKmsKeyArn?: string;
  /** Under it, extract/<execution>/ per execution. @default 's3zip-work/' */
  readonly workPrefix?: string;
  /** Folder holding <name>/bootstrap for each function. @default dist/functions */
  readonly functionsDir?: string;
  readonly planner?: FunctionSizing;
  readonly worker?: FunctionSizing;
  /** It holds every object written (key, size, CRC-32), ~0.4 GiB a million entries. @default 2,048 MB, 15 minutes */
  readonly finalizer?: FunctionSizing;
  /** Jobs per worker invocation (the planner's batchSize, read by MaxItemsPerBatchPath). @default 4 */
  readonly batchSize?: number;
  /** Map concurrency when a request gives none. @default 100 */
  readonly defaultMaxConcurrency?: number;
  /**
   * Child execution type of the Distributed Map. EXPRESS children end after 5 minutes including
   * retries, so EXPRESS requires a worker timeout of at most 4 minutes.
   * @default STANDARD
   */
  readonly mapExecutionType?: 'STANDARD' | 'EXPRESS';
  /** @default '<stack name>-Extract' */
  readonly stateMachineName?: string;
  readonly removalPolicy?: RemovalPolicy;
  readonly logRetention?: logs.RetentionDays;
}

/**
 * The extract workflow: a ZIP in S3 unpacked into objects under a prefix. Planner -> Distributed
 * Map of workers -> finalizer, abort on any failure; four functions of its own (not the archive
 * workflow's with an operation field) so each role holds only what its step does.
 */
export class ExtractWorkflow extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly functions: Record<ExtractFunctionName, lambda.Function>;
  readonly archiveRule: events.Rule;
  readonly stateMachineName: string;
  readonly definitionSubstitutions: Record<string, string>;

  constructor(scope: Construct, id: string, props: ExtractWorkflowProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const arn = (bucket: string, suffix = '') => `arn:${stack.partition}:s3:::${bucket}${suffix}`;
    const archivePrefix = normalizePrefix(props.archivePrefix, 'incoming/');
    const archiveSuffix = props.archiveSuffix ?? '.zip';
    const destinationBucket = props.destinationBucket ?? props.archiveBucket;
    const destinationPrefix = normalizePrefix(props.destinationPrefix, 'extracted/');
    if (destinationPrefix === '') throw new Error('ExtractWorkflow: destinationPrefix must not be empty');
    if (destinationBucket === props.archiveBucket && (archivePrefix.startsWith(destinationPrefix) || destinationPrefix.startsWith(archivePrefix))) {
      throw new Error(`ExtractWorkflow: archivePrefix ${archivePrefix} and destinationPrefix ${destinationPrefix} overlap (an extracted .zip would start another extraction)`);
    }
    const workPrefix = normalizePrefix(props.workPrefix, 's3zip-work/');
    const batchSize = props.batchSize ?? 4;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`ExtractWorkflow: batchSize must be a positive integer, got ${batchSize}`);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const functionsDir = props.functionsDir ?? DEFAULT_FUNCTIONS_DIR;

    const env: Record<string, string> = {
      WORK_BUCKET: props.workBucket.bucketName,
      WORK_PREFIX: workPrefix,
      EXTRACT_ARCHIVE_PREFIX: archivePrefix,
      EXTRACT_DESTINATION_BUCKET: destinationBucket,
      EXTRACT_DESTINATION_PREFIX: destinationPrefix,
      ALLOWED_ARCHIVES: `${props.archiveBucket}/${archivePrefix}`,
      ALLOWED_DESTINATIONS: `${destinationBucket}/${destinationPrefix}`,
      BATCH_SIZE: String(batchSize),
      DEFAULT_MAX_CONCURRENCY: String(props.defaultMaxConcurrency ?? 100),
    };
    const sizing: Record<ExtractFunctionName, Required<FunctionSizing>> = {
      // 10 M entries peak at 5.7 GB without a memory limit (565 MiB a million): infra/README.md, "Sizing, measured".
      'extract-planner': { memorySize: props.planner?.memorySize ?? EXTRACT_PLANNER_MEMORY, timeout: props.planner?.timeout ?? Duration.minutes(15) },
      // One full vCPU: workers inflate and hash.
      'extract-worker': { memorySize: props.worker?.memorySize ?? 1769, timeout: props.worker?.timeout ?? Duration.minutes(15) },
      // ~0.4 GiB a million entries (tests/load TestLoadExtractPerMillion): 2,048 MB holds about 4 M.
      'extract-finalizer': { memorySize: props.finalizer?.memorySize ?? 2048, timeout: props.finalizer?.timeout ?? Duration.minutes(15) },
      'extract-abort': { memorySize: 512, timeout: Duration.minutes(5) },
    };
    const mapExecutionType = props.mapExecutionType ?? 'STANDARD';
    // Only the worker runs in the Map's children.
    checkMapChildTimeouts('ExtractWorkflow', mapExecutionType, { worker: sizing['extract-worker'].timeout });
    const makeFunction = (name: ExtractFunctionName, logicalId: string, description: string): lambda.Function =>
      goFunction(this, logicalId, {
        owner: 'ExtractWorkflow', name, functionsDir, description, ...sizing[name], environment: env, logRetention, removalPolicy,
        ephemeralStorageSize: name === 'extract-planner' ? EXTRACT_PLANNER_TMP : undefined,
      });
    this.functions = {
      'extract-planner': makeFunction('extract-planner', 'ExtractPlanner', 's3zip extract: read the central directory, refuse bad archives, write the jobs'),
      'extract-worker': makeFunction('extract-worker', 'ExtractWorker', 's3zip extract: run a batch of copy and read jobs'),
      'extract-finalizer': makeFunction('extract-finalizer', 'ExtractFinalizer', 's3zip extract: check every object was written, write the report'),
      'extract-abort': makeFunction('extract-abort', 'ExtractAbort', "s3zip extract: abort this execution's uploads, delete its objects"),
    };
    const fns = this.functions;

    // ---- permissions: each function what it calls --------------------------------------------
    const workObjects = props.workBucket.arnForObjects(`${workPrefix}extract/*`);
    const workList = new iam.PolicyStatement({
      sid: 'WorkPrefixList',
      actions: ['s3:ListBucket'],
      resources: [props.workBucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': [`${workPrefix}extract/*`] } },
    });
    const work = (actions: string[]) => new iam.PolicyStatement({ sid: 'WorkPrefixObjects', actions, resources: [workObjects] });
    // GetObject on the archive also covers UploadPartCopy's read of it.
    const archiveRead = new iam.PolicyStatement({ sid: 'ArchiveRead', actions: ['s3:GetObject'], resources: [arn(props.archiveBucket, `/${archivePrefix}*`)] });
    const destinationObjects = arn(destinationBucket, `/${destinationPrefix}*`);
    const destination = (actions: string[]) => new iam.PolicyStatement({ sid: 'DestinationObjects', actions, resources: [destinationObjects] });
    const destinationList = new iam.PolicyStatement({
      sid: 'DestinationPrefixList',
      actions: ['s3:ListBucket'],
      resources: [arn(destinationBucket)],
      conditions: { StringLike: { 's3:prefix': [`${destinationPrefix}*`] } },
    });
    // ListMultipartUploads takes no s3:prefix condition; the handlers list only the destination prefix.
    const destinationUploads = new iam.PolicyStatement({ sid: 'DestinationUploadsList', actions: ['s3:ListBucketMultipartUploads'], resources: [arn(destinationBucket)] });
    const add = (fn: lambda.Function, statements: iam.PolicyStatement[]) => statements.forEach((s) => fn.addToRolePolicy(s));
    // planner: the archive's end records and directory; existing objects; the jobs.
    add(fns['extract-planner'], [archiveRead, destinationList, work(['s3:PutObject']), workList]);
    // worker: reads and copies of the archive; writes (PutObject covers create/part/copy/complete),
    // HEAD of an object a retried batch wrote before, abort of its own open uploads.
    add(fns['extract-worker'], [archiveRead, destination(['s3:PutObject', 's3:GetObject', 's3:AbortMultipartUpload'])]);
    // finalizer: the jobs and Map results; the report; uploads left by retried batches; cleanup.
    add(fns['extract-finalizer'], [
      work(['s3:GetObject', 's3:DeleteObject']),
      workList,
      destination(['s3:PutObject', 's3:GetObject', 's3:AbortMultipartUpload']),
      destinationUploads,
    ]);
    // abort: this execution's uploads and objects (HEAD for the execution metadata, delete If-Match).
    add(fns['extract-abort'], [
      work(['s3:GetObject', 's3:DeleteObject']),
      workList,
      destination(['s3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload']),
      destinationList,
      destinationUploads,
    ]);

    // KMS only where a key is configured, and only on that key: S3 asks KMS for a data key to
    // write an object or start an upload (GenerateDataKey) and to decrypt one it reads, copies
    // from, adds a part to or completes (Decrypt).
    const kmsUse = (sid: string, actions: string[], keyArns: string[]) => new iam.PolicyStatement({ sid, actions, resources: keyArns });
    const workKey = props.workBucket.encryptionKey?.keyArn;
    if (workKey) {
      fns['extract-planner'].addToRolePolicy(kmsUse('WorkKey', ['kms:GenerateDataKey'], [workKey]));
      for (const fn of [fns['extract-finalizer'], fns['extract-abort']]) fn.addToRolePolicy(kmsUse('WorkKey', ['kms:Decrypt'], [workKey]));
    }
    if (props.archiveKmsKeyArns && props.archiveKmsKeyArns.length > 0) {
      const s = kmsUse('ArchiveKeysDecrypt', ['kms:Decrypt'], props.archiveKmsKeyArns);
      for (const fn of [fns['extract-planner'], fns['extract-worker']]) fn.addToRolePolicy(s);
    }
    if (props.destinationKmsKeyArn) {
      // worker: creates, puts and completes objects; finalizer: puts the report.
      fns['extract-worker'].addToRolePolicy(kmsUse('DestinationKey', ['kms:Decrypt', 'kms:GenerateDataKey'], [props.destinationKmsKeyArn]));
      fns['extract-finalizer'].addToRolePolicy(kmsUse('DestinationKey', ['kms:GenerateDataKey'], [props.destinationKmsKeyArn]));
    }

    // ---- state machine -------------------------------------------------------------------------
    const stateMachineName = props.stateMachineName ?? `${stack.stackName}-Extract`.slice(0, 80);
    this.stateMachineName = stateMachineName;
    const stateMachineArn = stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: stateMachineName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    const childExecutionsArns = ['/*', ':*'].map((suffix) =>
      stack.formatArn({ service: 'states', resource: 'execution', resourceName: `${stateMachineName}${suffix}`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
    );
    const logGroup = new logs.LogGroup(this, 'StateMachineLogs', {
      logGroupName: `/aws/vendedlogs/states/${stateMachineName}`,
      retention: logRetention,
      removalPolicy,
    });
    // The same placeholder names as archive.asl.json, each a quoted string in the file.
    this.definitionSubstitutions = {
      PlannerFunctionArn: fns['extract-planner'].functionArn,
      WorkerFunctionArn: fns['extract-worker'].functionArn,
      FinalizerFunctionArn: fns['extract-finalizer'].functionArn,
      AbortFunctionArn: fns['extract-abort'].functionArn,
      MapExecutionType: mapExecutionType,
    };
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromFile(EXTRACT_ASL_PATH),
      definitionSubstitutions: this.definitionSubstitutions,
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    const all = Object.values(fns);
    const sm = this.stateMachine;
    sm.addToRolePolicy(new iam.PolicyStatement({ sid: 'InvokeExtractFunctions', actions: ['lambda:InvokeFunction'], resources: all.flatMap((fn) => [fn.functionArn, `${fn.functionArn}:*`]) }));
    sm.addToRolePolicy(new iam.PolicyStatement({ sid: 'MapItemReader', actions: ['s3:GetObject'], resources: [workObjects] }));
    sm.addToRolePolicy(
      new iam.PolicyStatement({ sid: 'MapResultWriter', actions: ['s3:PutObject', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:AbortMultipartUpload'], resources: [workObjects] }),
    );
    if (workKey) sm.addToRolePolicy(kmsUse('WorkBucketKey', ['kms:Decrypt', 'kms:GenerateDataKey'], [workKey]));
    sm.addToRolePolicy(new iam.PolicyStatement({ sid: 'MapChildExecutionsStart', actions: ['states:StartExecution'], resources: [stateMachineArn] }));
    sm.addToRolePolicy(new iam.PolicyStatement({ sid: 'MapChildExecutionsControl', actions: ['states:DescribeExecution', 'states:StopExecution'], resources: childExecutionsArns }));

    // ---- trigger: a new <archivePrefix>*<archiveSuffix> in the archive bucket --------------------
    this.archiveRule = new events.Rule(this, 'ArchiveObjectCreated', {
      description: `s3zip: extract each ${archivePrefix}*${archiveSuffix} created in ${props.archiveBucket}`,
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: {
          bucket: { name: [props.archiveBucket] },
          object: { key: events.Match.wildcard(`${archivePrefix}*${archiveSuffix}`) },
        },
      },
    });
    // No destination: the planner derives <destinationPrefix><name>/ from the key.
    this.archiveRule.addTarget(
      new targets.SfnStateMachine(sm, {
        input: events.RuleTargetInput.fromObject({
          archive: { bucket: events.EventField.fromPath('$.detail.bucket.name'), key: events.EventField.fromPath('$.detail.object.key') },
        }),
      }),
    );

    // ---- cdk-nag: each suppression names the finding it covers ---------------------------------
    const workFinding = `Resource::<${stack.getLogicalId(props.workBucket.node.defaultChild as never)}.Arn>/${workPrefix}extract/*`;
    const reason = 'Object keys are per archive and per execution, unknown at deploy time; each wildcard is confined to one bucket prefix (archives, destination, work).';
    for (const fn of all) {
      NagSuppressions.addResourceSuppressions(
        fn.role!,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason,
            appliesTo: [
              workFinding,
              `Resource::arn:<AWS::Partition>:s3:::${props.archiveBucket}/${archivePrefix}*`,
              `Resource::arn:<AWS::Partition>:s3:::${destinationBucket}/${destinationPrefix}*`,
            ],
          },
        ],
        true,
      );
    }
    NagSuppressions.addResourceSuppressions(
      sm.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Lambda invoke on <function ARN>:* allows the versions and aliases of exactly the four extract functions.',
          appliesTo: all.map((fn) => `Resource::<${stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction)}.Arn>:*`),
        },
        { id: 'AwsSolutions-IAM5', reason: 'The Map ItemReader and ResultWriter use the per-execution work prefix.', appliesTo: [workFinding] },
        {
          id: 'AwsSolutions-IAM5',
          reason: "Distributed Map child executions are named '<state machine>/<map run>:<uuid>' at run time; the wildcard covers only this state machine's executions.",
          appliesTo: [{ regex: `/^Resource::arn:<AWS::Partition>:states:[^/]+:execution:${stateMachineName.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(\\/|:)\\*$/g` }],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason: 'X-Ray and CloudWatch Logs delivery actions do not support resource-level permissions (added by CDK for tracing and logging).',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }
}
