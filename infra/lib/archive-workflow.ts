import * as fs from 'node:fs';
import * as path from 'node:path';
import { ArnFormat, Aws, CfnOutput, Duration, RemovalPolicy, Size, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { ARCHIVE_ASL_PATH, type Placeholder } from './asl';

/** Repository root (infra/lib -> ..). */
const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** Where `make lambdas` puts dist/functions/<name>/bootstrap. */
export const DEFAULT_FUNCTIONS_DIR = path.join(REPO_ROOT, 'dist', 'functions');

/** The five Go Lambda functions, by the directory name of their bootstrap binary. */
export const FUNCTION_NAMES = ['planner', 'reader', 'worker', 'finalizer', 'abort'] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** The statuses of an execution that has ended, as its status change events name them. */
export const ENDED_STATUSES = ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED'];

/** Prefix in the control bucket whose new objects start an execution. */
export const REQUESTS_PREFIX = 'requests/';

/**
 * Express child executions end after 5 minutes *including* their retries, so a worker that may
 * run longer than this cannot be used with EXPRESS children.
 */
const EXPRESS_CHILD_WORKER_LIMIT = Duration.seconds(240);

/**
 * Refuses, at synth time, EXPRESS map children whose functions (by prop name) may outlive them:
 * such a child would end mid-invocation on AWS, which no local run shows.
 */
export function checkMapChildTimeouts(owner: string, mapExecutionType: string, childTimeouts: Record<string, Duration>): void {
  if (mapExecutionType !== 'EXPRESS') return;
  for (const [name, timeout] of Object.entries(childTimeouts)) {
    if (timeout.toSeconds() > EXPRESS_CHILD_WORKER_LIMIT.toSeconds()) {
      throw new Error(
        `${owner}: EXPRESS map children end after 5 minutes including retries; ` +
          `set ${name}.timeout <= ${EXPRESS_CHILD_WORKER_LIMIT.toSeconds()}s or use mapExecutionType STANDARD`,
      );
    }
  }
}

export interface FunctionSizing {
  readonly memorySize?: number;
  readonly timeout?: Duration;
}

export interface ArchiveWorkflowProps {
  /** Buckets the planner may list and the workers may read. At least one. */
  readonly sourceBuckets: string[];
  /** Only keys under this prefix of the source buckets are readable. @default '' (whole buckets) */
  readonly sourcePrefix?: string;
  /** Bucket archives are written to (imported by name; add an AbortIncompleteMultipartUpload lifecycle rule to it yourself). */
  readonly destinationBucket: string;
  /** Archives may only be written under this prefix. @default '' (whole bucket) */
  readonly destinationPrefix?: string;

  /** Prefix in the work bucket for plans, part lists and map results. Must end with '/'. @default 's3zip-work/' */
  readonly workPrefix?: string;
  /** Work objects are deleted by lifecycle after this many days (a safety net; the finalizer and abort clean up). @default 2 */
  readonly workExpirationDays?: number;
  /** Customer-managed key for the work and control buckets. @default S3-managed encryption */
  readonly encryptionKey?: kms.IKey;
  /** KMS keys that encrypt source objects (decrypt is granted on exactly these). @default none */
  readonly sourceKmsKeyArns?: string[];
  /** KMS key the destination archives are encrypted with. @default none */
  readonly destinationKmsKeyArn?: string;
  /**
   * Where S3 Inventory reports may be read as sources (request `source.inventory`): each
   * "bucket" or "bucket/prefix" of an inventory's destination. The planner alone gets
   * s3:GetObject there (manifest.json, manifest.checksum, the data files). @default none: no grant
   */
  readonly inventoryBuckets?: string[];
  /**
   * Lets a request ask for download links in the execution's output (options.presign), signed by
   * the finalizer for at most this many seconds (1 to 604800, SigV4's 7 days; env
   * MAX_PRESIGN_SECONDS). A link reads the archive with the finalizer's role, so it hands whoever
   * may start an execution read access to the archive it made: off unless set. No grant is added:
   * the finalizer already holds s3:GetObject on the destination (its HEAD check). A link also dies
   * with the role's session credentials, often long before 7 days (README, Download links).
   * @default undefined: requests asking for links are refused before anything is written
   */
  readonly maxPresignSeconds?: number;
  /**
   * Told when an archive run ends: a rule on the default event bus matching this state machine's
   * "Step Functions Execution Status Change" events for SUCCEEDED (detail.output: docs/output.md),
   * FAILED, TIMED_OUT and ABORTED (detail.error, detail.cause), delivered unchanged to each target
   * (the README's rule, examples/notify/rule.json; examples/notify consumes it).
   * @default none: no rule
   */
  readonly endedTargets?: events.IRuleTarget[];

  /** Folder holding <name>/bootstrap for each function. @default dist/functions at the repo root */
  readonly functionsDir?: string;
  readonly planner?: FunctionSizing;
  /** The read pass's function (compression, digests). */
  readonly reader?: FunctionSizing;
  readonly worker?: FunctionSizing;
  readonly finalizer?: FunctionSizing;
  readonly abort?: FunctionSizing;

  /**
   * Part jobs per worker invocation, fixed for every plan (env PARTS_PER_BATCH; the planner writes it
   * into the job and the ASL's ItemBatcher reads it from there). @default each plan cuts its own for
   * its workers (plan.Fit, Go)
   */
  readonly partsPerBatch?: number;
  /** Most read jobs per reader invocation (env MAX_READS_PER_BATCH). @default workflow.DefaultMaxReadsPerBatch (Go) */
  readonly maxReadsPerBatch?: number;
  /**
   * Bytes of an object one read job reads and compresses (env PIECE_SIZE_BYTES); a reader holds
   * one compressed piece in memory. @default workflow.DefaultPieceSize (Go, 64 MiB)
   */
  readonly pieceSize?: number;
  /** Map concurrency when a request sets none (env DEFAULT_MAX_CONCURRENCY). @default 100 */
  readonly defaultMaxConcurrency?: number;
  /**
   * Child execution type of the Distributed Map. EXPRESS children are cheaper but end after
   * 5 minutes including retries, so EXPRESS requires a worker timeout of at most 4 minutes.
   * @default STANDARD
   */
  readonly mapExecutionType?: 'STANDARD' | 'EXPRESS';

  /** Name of the state machine; it is set explicitly so the role can name the map's child executions without a dependency cycle. @default '<stack name>-Archive' */
  readonly stateMachineName?: string;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** Retention of the state machine and function logs. @default one month */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * The planner's /tmp: it writes the plan's entries file there before putting it (about 210 bytes an
 * entry, 2.1 GB at 10 M; workflow/planner_write.go) — Lambda's default 512 MiB holds 2.4 M entries.
 * infra/README.md, "Sizing, measured".
 */
export const PLANNER_TMP = Size.mebibytes(4096);

/**
 * The finalizer's /tmp: as it streams the plan's entries it writes there each entry's central header (~110 bytes
 * with a 50-byte name: 1.1 GB at 10 M) and its line of the report (about 120 bytes besides its name and source key,
 * ~230 with 50-byte keys: 2.3 GB at 10 M), then sends the one and puts the other from there
 * (workflow/finalize_entries.go) — 3.4 GB at 10 M; the default 512 MiB holds about 1.5 M entries.
 */
export const FINALIZER_TMP = Size.mebibytes(4096);

// Measured as deployed (make test-scale, each function its own process): at
// 1,000,000 entries the planner peaks at 1,316 MiB and the finalizer at
// 1,512 MiB; 2,048 MB leaves headroom (infra/README.md, "Sizing, measured").
// The planner's 6,144 MB are for 10,000,000 entries (tests/load
// TestLoadPlannerPerMillion): its entries alone are ~2.4 GB there.
const DEFAULT_SIZING: Record<FunctionName, Required<FunctionSizing>> = {
  planner: { memorySize: 6144, timeout: Duration.minutes(15) },
  // 1,769 MB is one full vCPU: DEFLATE is CPU-bound and a reader compresses one piece (at most
  // 64 MiB, held compressed) at a time; more memory would buy vCPUs it does not use.
  reader: { memorySize: 1769, timeout: Duration.minutes(15) },
  // 1,769 MB is one full vCPU: workers hash and stream bytes.
  worker: { memorySize: 1769, timeout: Duration.minutes(15) },
  finalizer: { memorySize: 2048, timeout: Duration.minutes(15) },
  abort: { memorySize: 512, timeout: Duration.minutes(5) },
};

/** `arn:<partition>:s3:::<bucket><suffix>` without importing the bucket (so no '*' sneaks in). */
function s3Arn(bucket: string, suffix = ''): string {
  return `arn:${Aws.PARTITION}:s3:::${bucket}${suffix}`;
}

/** The object ARNs of inventoryBuckets' "bucket" or "bucket/prefix" entries (partition: as cdk-nag names it, for its findings). */
function inventoryObjectArns(locations: string[] = [], partition: string = Aws.PARTITION): string[] {
  return locations.map((l) => {
    const slash = l.indexOf('/');
    const bucket = slash < 0 ? l : l.slice(0, slash);
    const prefix = slash < 0 ? '' : l.slice(slash + 1).replace(/^\/+/, '');
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket) || prefix.includes('*')) {
      throw new Error(`ArchiveWorkflow: inventoryBuckets entry "${l}" is not "bucket" or "bucket/prefix"`);
    }
    return `arn:${partition}:s3:::${bucket}/${prefix}*`;
  });
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** A key prefix without leading slashes and with a trailing one ('' stays ''); `fallback` when unset. */
export function normalizePrefix(prefix: string | undefined, fallback = ''): string {
  const p = (prefix ?? fallback).replace(/^\/+/, '');
  return p === '' || p.endsWith('/') ? p : `${p}/`;
}

export interface GoFunctionProps {
  /** The construct that owns it, for the error message. */
  readonly owner: string;
  /** Folder name under functionsDir holding the Go `bootstrap` (make lambdas). */
  readonly name: string;
  readonly functionsDir: string;
  readonly description: string;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly environment: Record<string, string>;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Its /tmp. @default Lambda's 512 MiB */
  readonly ephemeralStorageSize?: Size;
}

/**
 * A Go Lambda (provided.al2023, arm64, the `bootstrap` make lambdas builds) with its own log group
 * and its own role, which holds only the right to write that log group: every other statement is
 * added by the workflow that owns it.
 */
export function goFunction(scope: Construct, logicalId: string, p: GoFunctionProps): lambda.Function {
  const assetDir = path.join(p.functionsDir, p.name);
  if (!fs.existsSync(path.join(assetDir, 'bootstrap'))) {
    throw new Error(`${p.owner}: ${path.join(assetDir, 'bootstrap')} not found; build the Go functions first (make lambdas) or pass functionsDir`);
  }
  const logGroup = new logs.LogGroup(scope, `${logicalId}Logs`, { retention: p.logRetention, removalPolicy: p.removalPolicy });
  // Own role per function: no AWS managed policy, only the statements added by its workflow.
  const role = new iam.Role(scope, `${logicalId}Role`, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `s3zip ${p.name} function`,
  });
  role.addToPolicy(
    new iam.PolicyStatement({
      sid: 'WriteOwnLogs',
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: [logGroup.logGroupArn],
    }),
  );
  return new lambda.Function(scope, logicalId, {
    description: p.description,
    runtime: lambda.Runtime.PROVIDED_AL2023,
    architecture: lambda.Architecture.ARM_64,
    handler: 'bootstrap',
    code: lambda.Code.fromAsset(assetDir),
    memorySize: p.memorySize,
    timeout: p.timeout,
    ephemeralStorageSize: p.ephemeralStorageSize,
    role,
    logGroup,
    environment: p.environment,
  });
}

/**
 * The s3zip workflow: planner -> Distributed Map of workers -> finalizer, abort on any failure,
 * with the buckets it works in, least-privilege roles, and an EventBridge trigger on
 * `requests/` objects in the control bucket.
 *
 * The ASL comes unchanged from statemachine/archive.asl.json; this construct only supplies
 * its placeholders.
 */
export class ArchiveWorkflow extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly workBucket: s3.Bucket;
  readonly controlBucket: s3.Bucket;
  readonly accessLogsBucket: s3.Bucket;
  readonly functions: Record<FunctionName, lambda.Function>;
  readonly requestRule: events.Rule;
  /** The rule that tells endedTargets a run ended (only with endedTargets). */
  readonly endedRule?: events.Rule;
  readonly stateMachineName: string;
  /** Every value substituted into the ASL, by placeholder name. */
  readonly definitionSubstitutions: Record<Placeholder, string>;

  constructor(scope: Construct, id: string, props: ArchiveWorkflowProps) {
    super(scope, id);
    const stack = Stack.of(this);

    if (props.sourceBuckets.length === 0) {
      throw new Error('ArchiveWorkflow: sourceBuckets must name at least one bucket');
    }
    const sourcePrefix = normalizePrefix(props.sourcePrefix);
    const destinationPrefix = normalizePrefix(props.destinationPrefix);
    const workPrefix = normalizePrefix(props.workPrefix ?? 's3zip-work/');
    if (workPrefix === '') throw new Error('ArchiveWorkflow: workPrefix must not be empty');
    for (const [name, value] of [
      ['partsPerBatch', props.partsPerBatch],
      ['maxReadsPerBatch', props.maxReadsPerBatch],
      ['pieceSize', props.pieceSize],
    ] as const) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
        throw new Error(`ArchiveWorkflow: ${name} must be a positive integer, got ${value}`);
      }
    }
    if (props.maxPresignSeconds !== undefined && (!Number.isInteger(props.maxPresignSeconds) || props.maxPresignSeconds < 1 || props.maxPresignSeconds > 604800)) {
      throw new Error(`ArchiveWorkflow: maxPresignSeconds must be a whole number of seconds from 1 to 604800 (7 days, SigV4's limit), got ${props.maxPresignSeconds}`);
    }
    const defaultMaxConcurrency = props.defaultMaxConcurrency ?? 100;
    const mapExecutionType = props.mapExecutionType ?? 'STANDARD';
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const functionsDir = props.functionsDir ?? DEFAULT_FUNCTIONS_DIR;

    const sizing = (name: FunctionName): Required<FunctionSizing> => ({
      memorySize: props[name]?.memorySize ?? DEFAULT_SIZING[name].memorySize,
      timeout: props[name]?.timeout ?? DEFAULT_SIZING[name].timeout,
    });
    checkMapChildTimeouts('ArchiveWorkflow', mapExecutionType, { worker: sizing('worker').timeout, reader: sizing('reader').timeout });

    // ---- buckets ---------------------------------------------------------------------------
    const encryption = props.encryptionKey
      ? { encryption: s3.BucketEncryption.KMS, encryptionKey: props.encryptionKey, bucketKeyEnabled: true }
      : { encryption: s3.BucketEncryption.S3_MANAGED };

    // Server access logs must go to an SSE-S3 bucket, so this one never uses the KMS key.
    // Object ownership is left to CDK: with the feature flag
    // @aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy (set in cdk.json) delivery is granted by a
    // bucket policy, without it by the LogDeliveryWrite ACL, which needs ObjectWriter.
    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogsBucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      removalPolicy,
      lifecycleRules: [{ id: 'ExpireAccessLogs', expiration: Duration.days(90) }],
    });

    this.workBucket = new s3.Bucket(this, 'WorkBucket', {
      ...encryption,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'work/',
      lifecycleRules: [
        {
          id: 'ExpireWorkObjects',
          prefix: workPrefix,
          expiration: Duration.days(props.workExpirationDays ?? 2),
        },
        { id: 'AbortIncompleteMultipartUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });

    this.controlBucket = new s3.Bucket(this, 'ControlBucket', {
      ...encryption,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'control/',
      lifecycleRules: [
        { id: 'AbortIncompleteMultipartUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    // Set EventBridge delivery on the CloudFormation bucket itself rather than through
    // `eventBridgeEnabled`, which adds a custom-resource Lambda with a '*' s3 policy.
    (this.controlBucket.node.defaultChild as s3.CfnBucket).notificationConfiguration = {
      eventBridgeConfiguration: { eventBridgeEnabled: true },
    };

    // ---- functions -------------------------------------------------------------------------
    const env: Record<string, string> = {
      WORK_BUCKET: this.workBucket.bucketName,
      WORK_PREFIX: workPrefix,
      CONTROL_BUCKET: this.controlBucket.bucketName,
      DEFAULT_MAX_CONCURRENCY: String(defaultMaxConcurrency),
      ALLOWED_SOURCE_BUCKETS: props.sourceBuckets.join(','),
      ALLOWED_DESTINATIONS: `${props.destinationBucket}/${destinationPrefix}`,
    };
    if (sourcePrefix !== '') env.ALLOWED_SOURCE_PREFIX = sourcePrefix;
    // Batch sizes: unset, the Go defaults hold (one place); the planner writes them into the state.
    if (props.partsPerBatch !== undefined) env.PARTS_PER_BATCH = String(props.partsPerBatch);
    if (props.maxReadsPerBatch !== undefined) env.MAX_READS_PER_BATCH = String(props.maxReadsPerBatch);
    if (props.pieceSize !== undefined) env.PIECE_SIZE_BYTES = String(props.pieceSize);
    // The planner refuses options.presign without it; the finalizer signs with it.
    if (props.maxPresignSeconds !== undefined) env.MAX_PRESIGN_SECONDS = String(props.maxPresignSeconds);
    // Archives are encrypted with the destination key unless a request names another.
    if (props.destinationKmsKeyArn) env.DESTINATION_KMS_KEY_ARN = props.destinationKmsKeyArn;

    const makeFunction = (name: FunctionName, logicalId: string, description: string): lambda.Function =>
      goFunction(this, logicalId, {
        owner: 'ArchiveWorkflow',
        name,
        functionsDir,
        description,
        ...sizing(name),
        environment: env,
        ephemeralStorageSize: name === 'planner' ? PLANNER_TMP : name === 'finalizer' ? FINALIZER_TMP : undefined,
        logRetention,
        removalPolicy,
      });

    this.functions = {
      planner: makeFunction('planner', 'Planner', 's3zip: plan the ZIP layout and its multipart parts'),
      reader: makeFunction('reader', 'Reader', 's3zip: read and compress pieces of entries (the read pass)'),
      worker: makeFunction('worker', 'Worker', 's3zip: build a batch of multipart parts'),
      finalizer: makeFunction('finalizer', 'Finalizer', 's3zip: write the central directory and complete the archive'),
      abort: makeFunction('abort', 'Abort', 's3zip: abort the upload and delete work objects'),
    };
    const { planner, reader, worker, finalizer, abort } = this.functions;

    // ---- function permissions (explicit statements, no wildcard actions) -------------------
    const workObjects = `${this.workBucket.bucketArn}/${workPrefix}*`;
    // Work objects, per function (tests/deployed lists every grant no call uses): the planner
    // writes (plan files, the pad, read jobs, an entry's compressed pieces joined) and deletes
    // (pieces once joined, or of an entry left STORED); the reader writes compressed pieces and, to learn the CRC-32 of a source that
    // stores none without reading it, copies it into a probe upload that it aborts; workers write chain rounds and delete each one once the next
    // round has copied it (a chain holds a few rounds at a time, not all of them; found by
    // tests/deployed); the finalizer also records each archive of a split run it completes (which
    // Abort deletes if the run fails after all); the finalizer and abort read and delete; all abort uploads under the
    // prefix (chain rounds left open).
    const workObjectsFor = (name: FunctionName) =>
      new iam.PolicyStatement({
        sid: 'WorkPrefixObjects',
        actions:
          name === 'planner'
            ? ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload']
            : name === 'reader'
              ? ['s3:PutObject', 's3:AbortMultipartUpload']
              : name === 'worker' || name === 'finalizer'
              ? ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload']
              : ['s3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        resources: [workObjects],
      });
    const workAccess = [
      new iam.PolicyStatement({
        sid: 'WorkPrefixList',
        actions: ['s3:ListBucket'],
        resources: [this.workBucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [`${workPrefix}*`] } },
      }),
    ];

    // Cleaning the work prefix also aborts chain-round uploads left in the work bucket, which
    // needs the bucket's list of uploads (this action takes no s3:prefix condition).
    // Found by tests/deployed: without it every finalizer and abort failed with AccessDenied.
    const workUploadsList = new iam.PolicyStatement({
      sid: 'WorkUploadsList',
      actions: ['s3:ListBucketMultipartUploads'],
      resources: [this.workBucket.bucketArn],
    });

    const sourceObjectsRead = [
      new iam.PolicyStatement({
        sid: 'SourceObjectsRead',
        // GetObjectVersion: sources of a versioned bucket are read by the version the planner pinned.
        actions: ['s3:GetObject', 's3:GetObjectVersion'],
        resources: props.sourceBuckets.map((b) => s3Arn(b, `/${sourcePrefix}*`)),
      }),
    ];
    const sourceList = new iam.PolicyStatement({
      sid: 'SourceBucketsList',
      actions: ['s3:ListBucket'],
      resources: props.sourceBuckets.map((b) => s3Arn(b)),
      ...(sourcePrefix !== '' ? { conditions: { StringLike: { 's3:prefix': [`${sourcePrefix}*`] } } } : {}),
    });
    const sourceRead = [...sourceObjectsRead, sourceList];

    // The final part may carry the archive's tail (small objects after the last copied one),
    // which the finalizer reads from the sources: read-only, objects only, no listing.
    const sourceTailRead = new iam.PolicyStatement({
      sid: 'SourceObjectsReadTail',
      actions: ['s3:GetObject', 's3:GetObjectVersion'],
      resources: props.sourceBuckets.map((b) => s3Arn(b, `/${sourcePrefix}*`)),
    });

    const destinationObjects = s3Arn(props.destinationBucket, `/${destinationPrefix}*`);
    // PutObject covers Create/UploadPart/UploadPartCopy/CompleteMultipartUpload. Each function
    // gets what it calls (measured by tests/deployed):
    //   planner   HEAD (GetObject) for the overwrite check, create with tags (PutObjectTagging),
    //             abort an upload whose create answer was lost;
    //   worker    UploadPart / UploadPartCopy only;
    //   finalizer last part + complete, HEAD to verify, DeleteObject of an archive this run
    //             completed that fails the check (no wrong bytes are left behind); the same
    //             s3:GetObject is what its download links (maxPresignSeconds) read with.
    const destinationObjectsFor = (actions: string[]) =>
      new iam.PolicyStatement({ sid: 'DestinationObjectsWrite', actions, resources: [destinationObjects] });
    const destinationWrite = [
      new iam.PolicyStatement({
        sid: 'DestinationPrefixList',
        // Lets the planner tell "absent" from "forbidden" for the overwrite=false check.
        actions: ['s3:ListBucket'],
        resources: [s3Arn(props.destinationBucket)],
        ...(destinationPrefix !== '' ? { conditions: { StringLike: { 's3:prefix': [`${destinationPrefix}*`] } } } : {}),
      }),
    ];
    const destinationAbort = [
      new iam.PolicyStatement({
        sid: 'DestinationUploadsAbort',
        actions: ['s3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
        resources: [destinationObjects],
      }),
      new iam.PolicyStatement({
        sid: 'DestinationUploadsList',
        actions: ['s3:ListBucketMultipartUploads'],
        resources: [s3Arn(props.destinationBucket)],
      }),
    ];

    const controlRead = new iam.PolicyStatement({
      sid: 'ControlObjectsRead',
      // Request objects (requests/) and manifests the requests point to.
      actions: ['s3:GetObject'],
      resources: [this.controlBucket.arnForObjects('*')],
    });

    // Inventory reports: read by the planner only, and only where the deployment says they are.
    const inventoryArns = inventoryObjectArns(props.inventoryBuckets);
    const inventoryRead =
      inventoryArns.length === 0 ? [] : [new iam.PolicyStatement({ sid: 'InventoryReportsRead', actions: ['s3:GetObject'], resources: inventoryArns })];

    const add = (fn: lambda.Function, statements: iam.PolicyStatement[]) => {
      for (const s of statements) fn.addToRolePolicy(s);
    };
    // The planner lists the destination's uploads to abort one whose create answer was lost. Of
    // the sources it only lists: a manifest's objects, their CRC-32s and metadata are looked up by
    // the reader (tests/deployed found its s3:GetObject and kms:Decrypt on them unused).
    add(planner, [
      workObjectsFor('planner'),
      ...workAccess,
      sourceList,
      destinationObjectsFor(['s3:PutObject', 's3:PutObjectTagging', 's3:AbortMultipartUpload', 's3:GetObject']),
      ...destinationWrite,
      destinationAbort[1],
      controlRead,
      ...inventoryRead,
    ]);
    // The reader reads sources by range (If-Match on the planned ETag) and writes pieces under the
    // work prefix, and looks sources up (HEAD = s3:GetObject; a copy into its probe upload): no
    // destination, no delete. It may list the sources, as the worker may, so that a source deleted
    // since planning answers 404 (SourceChangedError), not 403.
    add(reader, [workObjectsFor('reader'), ...sourceRead]);
    add(worker, [workObjectsFor('worker'), ...workAccess, ...sourceRead, destinationObjectsFor(['s3:PutObject'])]);
    add(finalizer, [
      workObjectsFor('finalizer'),
      ...workAccess,
      workUploadsList,
      sourceTailRead,
      destinationObjectsFor(['s3:PutObject', 's3:GetObject', 's3:DeleteObject']),
      ...destinationWrite,
    ]);
    // Abort aborts the job's upload by its id; it never lists the destination's uploads. A split
    // run's archives the finalizer completed before the run failed are deleted (HEAD to find each
    // still the one this run made, by its ETag; then DeleteObject): a failed run leaves none.
    const destinationDiscard = new iam.PolicyStatement({
      sid: 'DestinationArchivesDiscard',
      actions: ['s3:GetObject', 's3:DeleteObject'],
      resources: [destinationObjects],
    });
    add(abort, [workObjectsFor('abort'), ...workAccess, workUploadsList, destinationAbort[0], destinationDiscard]);

    // KMS only where a key is configured, only on that key, and only what each function's S3 calls
    // make S3 ask KMS for (tests/deployed checks every call and lists any grant none used): a data
    // key to write an object or start an upload (GenerateDataKey), a decrypt to read one, copy from
    // it, add a part to or complete it (Decrypt). S3 never calls kms:Encrypt for SSE-KMS.
    const kmsUse = (sid: string, actions: string[], keyArns: string[]) => new iam.PolicyStatement({ sid, actions, resources: keyArns });
    const DECRYPT = 'kms:Decrypt';
    const DATA_KEY = 'kms:GenerateDataKey';
    if (props.encryptionKey) {
      // The reader writes pieces and adds copies to its probe upload; the finalizer and abort only
      // read and delete.
      const workKeyUse: Record<FunctionName, string[]> = {
        planner: [DECRYPT, DATA_KEY],
        reader: [DECRYPT, DATA_KEY],
        worker: [DECRYPT, DATA_KEY],
        finalizer: [DECRYPT, DATA_KEY], // records each archive of a split run it completes (done/)
        abort: [DECRYPT],
      };
      for (const name of FUNCTION_NAMES) {
        this.functions[name].addToRolePolicy(kmsUse('WorkAndControlKey', workKeyUse[name], [props.encryptionKey.keyArn]));
      }
    }
    if (props.sourceKmsKeyArns && props.sourceKmsKeyArns.length > 0) {
      const s = kmsUse('SourceKeysDecrypt', [DECRYPT], props.sourceKmsKeyArns);
      for (const fn of [reader, worker, finalizer]) fn.addToRolePolicy(s);
    }
    if (props.destinationKmsKeyArn) {
      // planner: creates the upload; worker: adds parts; finalizer: the last part, the
      // completion and the report.
      const key = [props.destinationKmsKeyArn];
      planner.addToRolePolicy(kmsUse('DestinationKey', [DATA_KEY], key));
      worker.addToRolePolicy(kmsUse('DestinationKey', [DECRYPT], key));
      finalizer.addToRolePolicy(kmsUse('DestinationKey', [DECRYPT, DATA_KEY], key));
    }

    // ---- state machine ---------------------------------------------------------------------
    const stateMachineName = props.stateMachineName ?? `${stack.stackName}-Archive`.slice(0, 80);
    this.stateMachineName = stateMachineName;
    // Built from the name, not from the StateMachine's Ref/Arn: the role must exist before the
    // state machine, so referencing the state machine here would be a cycle.
    const stateMachineArn = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    // Map Run children are named '<state machine>/<map run>:<id>'; the Step Functions guide
    // ("IAM policies for using Distributed Map states") has shown both '<name>/*' and '<name>:*'
    // for DescribeExecution/StopExecution, so both forms are granted, each confined to this
    // state machine's executions.
    const childExecutionsArns = ['/*', ':*'].map((suffix) =>
      stack.formatArn({
        service: 'states',
        resource: 'execution',
        resourceName: `${stateMachineName}${suffix}`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    );

    const logGroup = new logs.LogGroup(this, 'StateMachineLogs', {
      // Step Functions vended logs require the /aws/vendedlogs/ prefix to keep resource policies small.
      logGroupName: `/aws/vendedlogs/states/${stateMachineName}`,
      retention: logRetention,
      removalPolicy,
    });

    this.definitionSubstitutions = {
      PlannerFunctionArn: planner.functionArn,
      ReaderFunctionArn: reader.functionArn,
      WorkerFunctionArn: worker.functionArn,
      FinalizerFunctionArn: finalizer.functionArn,
      AbortFunctionArn: abort.functionArn,
      MapExecutionType: mapExecutionType,
    };

    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromFile(ARCHIVE_ASL_PATH),
      definitionSubstitutions: this.definitionSubstitutions,
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });

    const fns = [planner, reader, worker, finalizer, abort];
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'InvokeWorkflowFunctions',
        actions: ['lambda:InvokeFunction'],
        resources: fns.flatMap((fn) => [fn.functionArn, `${fn.functionArn}:*`]),
      }),
    );
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'MapItemReader',
        actions: ['s3:GetObject'],
        resources: [workObjects],
      }),
    );
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'MapResultWriter',
        actions: ['s3:PutObject', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:AbortMultipartUpload'],
        resources: [workObjects],
      }),
    );
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'MapChildExecutionsStart',
        actions: ['states:StartExecution'],
        resources: [stateMachineArn],
      }),
    );
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'MapChildExecutionsControl',
        actions: ['states:DescribeExecution', 'states:StopExecution'],
        resources: childExecutionsArns,
      }),
    );
    if (props.encryptionKey) {
      // ItemReader reads, ResultWriter writes.
      this.stateMachine.addToRolePolicy(kmsUse('WorkBucketKey', [DECRYPT, DATA_KEY], [props.encryptionKey.keyArn]));
    }

    // ---- trigger: a request object under requests/ starts an execution ----------------------
    this.requestRule = new events.Rule(this, 'RequestObjectCreated', {
      description: 's3zip: start an archive for each request object put under requests/',
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: {
          bucket: { name: [this.controlBucket.bucketName] },
          object: { key: [{ prefix: REQUESTS_PREFIX }] },
        },
      },
    });
    this.requestRule.addTarget(
      new targets.SfnStateMachine(this.stateMachine, {
        input: events.RuleTargetInput.fromObject({
          requestObject: {
            bucket: events.EventField.fromPath('$.detail.bucket.name'),
            key: events.EventField.fromPath('$.detail.object.key'),
          },
        }),
      }),
    );

    // ---- notice: a run ended --------------------------------------------------------------
    if (props.endedTargets && props.endedTargets.length > 0) {
      this.endedRule = new events.Rule(this, 'ArchiveEnded', {
        description: 's3zip: an archive run ended (its execution status change)',
        eventPattern: {
          source: ['aws.states'],
          detailType: ['Step Functions Execution Status Change'],
          detail: { stateMachineArn: [this.stateMachine.stateMachineArn], status: ENDED_STATUSES },
        },
      });
      for (const target of props.endedTargets) this.endedRule.addTarget(target);
    }

    this.addNagSuppressions({ workPrefix, sourcePrefix, destinationPrefix, props });
  }

  /** Each suppression names the one finding it covers and why it is acceptable. */
  private addNagSuppressions(ctx: {
    workPrefix: string;
    sourcePrefix: string;
    destinationPrefix: string;
    props: ArchiveWorkflowProps;
  }): void {
    const stack = Stack.of(this);
    const workObjectsFinding = `Resource::<${stack.getLogicalId(this.workBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${ctx.workPrefix}*`;
    const perObjectReason =
      'Object keys are per execution and unknown at deploy time; the wildcard is confined to one bucket prefix.';
    for (const name of FUNCTION_NAMES) {
      const fn = this.functions[name];
      const appliesTo: (string | { regex: string })[] = [workObjectsFinding];
      if (name === 'reader' || name === 'worker' || name === 'finalizer') {
        appliesTo.push(...ctx.props.sourceBuckets.map((b) => `Resource::arn:<AWS::Partition>:s3:::${b}/${ctx.sourcePrefix}*`));
      }
      if (name !== 'reader') {
        appliesTo.push(`Resource::arn:<AWS::Partition>:s3:::${ctx.props.destinationBucket}/${ctx.destinationPrefix}*`);
      }
      if (name === 'planner') {
        appliesTo.push(`Resource::<${stack.getLogicalId(this.controlBucket.node.defaultChild as s3.CfnBucket)}.Arn>/*`);
        appliesTo.push(...inventoryObjectArns(ctx.props.inventoryBuckets, '<AWS::Partition>').map((a) => `Resource::${a}`));
      }
      NagSuppressions.addResourceSuppressions(
        fn.role!,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason: `${name}: ${perObjectReason} ${name === 'planner' ? 'It reads no source object (it lists them)' : 'Sources are limited to the configured buckets/prefix'}, the destination to its prefix, the work bucket to the work prefix${name === 'planner' ? ', the control bucket holds only request and manifest objects, and inventory reports are read only where inventoryBuckets says' : ''}.`,
            appliesTo,
          },
        ],
        true,
      );
    }

    const fnArnFindings = FUNCTION_NAMES.map(
      (n) => `Resource::<${stack.getLogicalId(this.functions[n].node.defaultChild as lambda.CfnFunction)}.Arn>:*`,
    );
    NagSuppressions.addResourceSuppressions(
      this.stateMachine.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Lambda invoke on <function ARN>:* allows the versions and aliases of exactly the five workflow functions.',
          appliesTo: fnArnFindings,
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'The Distributed Maps\' ItemReaders read reads/jobs.json and parts.jsonl and their ResultWriters write results under the per-execution work prefix; keys are unknown at deploy time.',
          appliesTo: [workObjectsFinding],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "Distributed Map child executions are named '<state machine>/<map run>:<uuid>' at run time; the wildcard covers only this state machine's executions.",
          // Region and account are tokens in an environment-agnostic stack and literals otherwise.
          appliesTo: [
            {
              regex: `/^Resource::arn:<AWS::Partition>:states:[^/]+:execution:${escapeRegex(this.stateMachineName)}(\\/|:)\\*$/g`,
            },
          ],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'X-Ray PutTraceSegments/PutTelemetryRecords/GetSampling* and CloudWatch Logs delivery actions (CreateLogDelivery etc.) do not support resource-level permissions; AWS requires Resource "*" for them (added by CDK for tracing and logging).',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }
}

/** Adds the stack outputs a user needs to run the workflow. */
export function addArchiveWorkflowOutputs(scope: Construct, workflow: ArchiveWorkflow): void {
  new CfnOutput(scope, 'StateMachineArn', { value: workflow.stateMachine.stateMachineArn });
  new CfnOutput(scope, 'ControlBucketName', { value: workflow.controlBucket.bucketName });
  new CfnOutput(scope, 'WorkBucketName', { value: workflow.workBucket.bucketName });
}
