import { CfnOutput, Duration, Size, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { createArchiveBuckets } from './archive-buckets';
import { FUNCTION_NAMES, type FunctionName, grantArchiveFunctions, inventoryObjectArns } from './archive-grants';
import type { Placeholder } from './asl';
import { goFunction } from './go-function';
import { type MonitoringProps, WorkflowMonitoring } from './monitoring';
import {
  checkBucketName,
  checkMapChildTimeouts,
  checkPositiveInteger,
  checkSizing,
  type FunctionSizing,
  mapStateMachine,
  mapWorkflowSettings,
  type MapWorkflowProps,
  type MapWorkflowSettings,
  normalizePrefix,
  sizingOf,
  suppressMapStateMachineFindings,
} from './map-workflow';
import { ARCHIVE_ASL_PATH, DEFAULT_FUNCTIONS_DIR } from './paths';

/** The statuses of an execution that has ended, as its status change events name them. */
export const ENDED_STATUSES = ['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED'];

/** keepFailedRunsDays' default and its largest value (Step Functions redrives an execution for 14 days). */
export const DEFAULT_KEEP_FAILED_RUNS_DAYS = 7;
export const MAX_KEEP_FAILED_RUNS_DAYS = 14;

/** Prefix in the control bucket whose new objects start an execution. */
export const REQUESTS_PREFIX = 'requests/';

export interface ArchiveWorkflowProps extends MapWorkflowProps {
  /** Buckets the planner may list and the workers may read (names). At least one. */
  readonly sourceBuckets: string[];
  /** Only keys under this prefix of the source buckets are readable. @default '' (whole buckets) */
  readonly sourcePrefix?: string;
  /** Bucket archives are written to (imported by name; add an AbortIncompleteMultipartUpload lifecycle rule to it yourself). */
  readonly destinationBucket: string;
  /** Archives may only be written under this prefix. @default '' (whole bucket) */
  readonly destinationPrefix?: string;

  /** Work objects are deleted by lifecycle after this many days (a safety net; the finalizer and abort clean up). @default 2 */
  readonly workExpirationDays?: number;
  /**
   * Days a run that fails building or finalizing its parts for a cause a retry may mend (S3 or
   * Lambda errors that outlast every retry) keeps its multipart upload and work objects, so that
   * Redrive (the console's button, `aws stepfunctions redrive-execution`) continues it and builds
   * only the parts not built; a failure no retry mends is aborted at once whatever this says.
   * The work bucket's lifecycle rules remove what nobody redrives: its work objects expire, and
   * its incomplete uploads are aborted, one day after this. The archive's own upload is in the
   * destination bucket: give it an AbortIncompleteMultipartUpload rule of at least this many
   * days. 1 to 14 (Step Functions redrives an execution for 14 days). @default 7
   */
  readonly keepFailedRunsDays?: number;
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
  /** Most read jobs per reader invocation (env MAX_READS_PER_BATCH). @default 8 (the Go default, create.DefaultMaxReadsPerBatch) */
  readonly maxReadsPerBatch?: number;
  /**
   * Bytes of an object one read job reads and compresses (env PIECE_SIZE_BYTES); a reader holds
   * one compressed piece in memory. @default 67108864 (64 MiB, the Go default, create.DefaultPieceSize)
   */
  readonly pieceSize?: number;
}

/**
 * The planner's /tmp: it writes the plan's entries file there before putting it (about 210 bytes an
 * entry, 2.1 GB at 10 M; create/planner_write.go) — Lambda's default 512 MiB holds 2.4 M entries.
 * infra/README.md, "Sizing, measured".
 */
export const PLANNER_TMP = Size.mebibytes(4096);

/**
 * The finalizer's /tmp: as it streams the plan's entries it writes there each entry's central header (~110 bytes
 * with a 50-byte name: 1.1 GB at 10 M) and its line of the report (about 120 bytes besides its name and source key,
 * ~230 with 50-byte keys: 2.3 GB at 10 M), then sends the one and puts the other from there
 * (create/finalizer_entries.go) — 3.4 GB at 10 M; the default 512 MiB holds about 1.5 M entries.
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

const FUNCTION_SPECS: Record<FunctionName, { logicalId: string; description: string; tmp?: Size }> = {
  planner: { logicalId: 'Planner', description: 's3zip: plan the ZIP layout and its multipart parts', tmp: PLANNER_TMP },
  reader: { logicalId: 'Reader', description: 's3zip: read and compress pieces of entries (the read pass)' },
  worker: { logicalId: 'Worker', description: 's3zip: build a batch of multipart parts' },
  finalizer: { logicalId: 'Finalizer', description: 's3zip: write the central directory and complete the archive', tmp: FINALIZER_TMP },
  abort: { logicalId: 'Abort', description: 's3zip: abort the upload and delete work objects' },
};

/** The props with their defaults applied and checked. */
interface ArchiveSettings extends MapWorkflowSettings {
  readonly sourcePrefix: string;
  readonly destinationPrefix: string;
  readonly sizing: Record<FunctionName, Required<FunctionSizing>>;
}

const OWNER = 'ArchiveWorkflow';

function archiveSettings(scope: Construct, props: ArchiveWorkflowProps): ArchiveSettings {
  checkArchiveProps(props);
  const shared = mapWorkflowSettings(scope, OWNER, 'Archive', props, DEFAULT_FUNCTIONS_DIR);
  const sizing = Object.fromEntries(FUNCTION_NAMES.map((n) => [n, sizingOf(props[n], DEFAULT_SIZING[n])])) as Record<FunctionName, Required<FunctionSizing>>;
  for (const n of FUNCTION_NAMES) checkSizing(OWNER, n, sizing[n]);
  checkMapChildTimeouts(OWNER, shared.mapExecutionType, { worker: sizing.worker.timeout, reader: sizing.reader.timeout });
  return { ...shared, sourcePrefix: normalizePrefix(props.sourcePrefix), destinationPrefix: normalizePrefix(props.destinationPrefix), sizing };
}

/** Refuses props that would deploy a workflow that cannot run, saying which and how to fix it. */
function checkArchiveProps(props: ArchiveWorkflowProps): void {
  if (!Array.isArray(props.sourceBuckets) || props.sourceBuckets.length === 0) {
    throw new Error(`${OWNER}: sourceBuckets must name at least one bucket`);
  }
  for (const b of [...props.sourceBuckets, props.destinationBucket]) {
    checkBucketName(OWNER, b, 'give sourceBuckets and destinationBucket as bare names (3 to 63 of a-z 0-9 . -), and key prefixes in sourcePrefix / destinationPrefix');
  }
  checkPositiveInteger(OWNER, 'partsPerBatch', props.partsPerBatch);
  checkPositiveInteger(OWNER, 'maxReadsPerBatch', props.maxReadsPerBatch);
  checkPositiveInteger(OWNER, 'pieceSize', props.pieceSize);
  checkPositiveInteger(OWNER, 'workExpirationDays', props.workExpirationDays);
  const keep = props.keepFailedRunsDays;
  if (keep !== undefined && (!Number.isInteger(keep) || keep < 1 || keep > MAX_KEEP_FAILED_RUNS_DAYS)) {
    throw new Error(`${OWNER}: keepFailedRunsDays must be a whole number of days from 1 to ${MAX_KEEP_FAILED_RUNS_DAYS} (Step Functions redrives an execution for 14 days), got ${keep}`);
  }
  const presign = props.maxPresignSeconds;
  if (presign !== undefined && (!Number.isInteger(presign) || presign < 1 || presign > 604800)) {
    throw new Error(`${OWNER}: maxPresignSeconds must be a whole number of seconds from 1 to 604800 (7 days, SigV4's limit), got ${presign}`);
  }
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
  /** The five functions by name (FUNCTION_NAMES: planner, reader, worker, finalizer, abort). */
  readonly functions: Record<string, lambda.Function>;
  readonly requestRule: events.Rule;
  /** The rule that tells endedTargets a run ended (only with endedTargets). */
  readonly endedRule?: events.Rule;
  readonly stateMachineName: string;
  /** Every value substituted into the ASL, by placeholder name. */
  readonly definitionSubstitutions: Record<string, string>;
  /** The alarms and dashboard (only with the monitoring prop). */
  readonly monitoring?: WorkflowMonitoring;
  /** Days a run failed for a cause a retry may mend is kept for Redrive (keepFailedRunsDays). */
  readonly keepFailedRunsDays: number;

  constructor(scope: Construct, id: string, props: ArchiveWorkflowProps) {
    super(scope, id);
    const settings = archiveSettings(this, props);
    this.keepFailedRunsDays = props.keepFailedRunsDays ?? DEFAULT_KEEP_FAILED_RUNS_DAYS;
    const buckets = createArchiveBuckets(this, {
      workPrefix: settings.workPrefix,
      workExpirationDays: props.workExpirationDays ?? 2,
      keepFailedRunsDays: this.keepFailedRunsDays,
      encryptionKey: props.encryptionKey,
      removalPolicy: settings.removalPolicy,
    });
    this.workBucket = buckets.work;
    this.controlBucket = buckets.control;
    this.accessLogsBucket = buckets.accessLogs;
    const functions = this.createFunctions(settings, props);
    this.functions = functions;
    grantArchiveFunctions({
      functions,
      workBucket: this.workBucket,
      controlBucket: this.controlBucket,
      workPrefix: settings.workPrefix,
      sourceBuckets: props.sourceBuckets,
      sourcePrefix: settings.sourcePrefix,
      destinationBucket: props.destinationBucket,
      destinationPrefix: settings.destinationPrefix,
      inventoryArns: inventoryObjectArns(props.inventoryBuckets),
      encryptionKey: props.encryptionKey,
      sourceKmsKeyArns: props.sourceKmsKeyArns,
      destinationKmsKeyArn: props.destinationKmsKeyArn,
    });
    this.stateMachineName = settings.stateMachineName;
    const substitutions: Record<Placeholder, string> = {
      PlannerFunctionArn: this.functions.planner.functionArn,
      ReaderFunctionArn: this.functions.reader.functionArn,
      WorkerFunctionArn: this.functions.worker.functionArn,
      FinalizerFunctionArn: this.functions.finalizer.functionArn,
      AbortFunctionArn: this.functions.abort.functionArn,
      MapExecutionType: settings.mapExecutionType,
    };
    this.definitionSubstitutions = substitutions;
    this.stateMachine = mapStateMachine(this, {
      settings,
      aslPath: ARCHIVE_ASL_PATH,
      substitutions: this.definitionSubstitutions,
      functions: FUNCTION_NAMES.map((n) => this.functions[n]),
      invokeSid: 'InvokeWorkflowFunctions',
      workObjects: this.workObjects(settings),
      workKeyArn: props.encryptionKey?.keyArn,
    });
    this.requestRule = this.createRequestRule();
    this.endedRule = this.createEndedRule(props.endedTargets ?? []);
    this.addNagSuppressions(settings, props);
    if (props.monitoring) this.monitoring = this.createMonitoring(props.monitoring);
  }

  /**
   * Adds this workflow's stack outputs to scope, as addArchiveWorkflowOutputs does: the form other
   * languages can call (jsii carries methods, not functions), e.g. `archive.add_outputs(stack)` in Python.
   */
  addOutputs(scope: Construct, prefix?: string): void {
    addArchiveWorkflowOutputs(scope, this, prefix);
  }

  /** Alarms and a dashboard; its log-derived metrics come from the planner's "planned" and the worker's "batch built" lines. */
  private createMonitoring(props: MonitoringProps): WorkflowMonitoring {
    const { planner, worker } = this.functions;
    const planned = (name: string, field: string) => ({ name, function: planner, msg: 'planned', field });
    return new WorkflowMonitoring(
      this,
      'Monitoring',
      {
        stateMachine: this.stateMachine,
        functions: FUNCTION_NAMES.map((n) => this.functions[n]),
        namespace: `s3zip/${this.stateMachineName}`,
        loggedMetrics: [
          planned('PartsPlanned', 'parts'),
          { name: 'PartsBuilt', function: worker, msg: 'batch built', field: 'parts' },
          planned('BytesStreamed', 'streamedBytes'),
          planned('BytesCopied', 'copiedBytes'),
        ],
        charts: [
          { title: 'Parts planned and built', metrics: ['PartsPlanned', 'PartsBuilt'] },
          { title: 'Bytes streamed through workers and copied by S3 (as planned)', metrics: ['BytesStreamed', 'BytesCopied'] },
        ],
      },
      props,
    );
  }

  /** The five functions, each with its own role and log group, sharing one environment. */
  private createFunctions(settings: ArchiveSettings, props: ArchiveWorkflowProps): Record<FunctionName, lambda.Function> {
    const environment = this.functionEnvironment(settings, props);
    const make = (name: FunctionName) =>
      goFunction(this, FUNCTION_SPECS[name].logicalId, {
        owner: OWNER,
        name,
        functionsDir: settings.functionsDir,
        description: FUNCTION_SPECS[name].description,
        ...settings.sizing[name],
        environment,
        ephemeralStorageSize: FUNCTION_SPECS[name].tmp,
        logRetention: settings.logRetention,
        removalPolicy: settings.removalPolicy,
      });
    return { planner: make('planner'), reader: make('reader'), worker: make('worker'), finalizer: make('finalizer'), abort: make('abort') };
  }

  private functionEnvironment(settings: ArchiveSettings, props: ArchiveWorkflowProps): Record<string, string> {
    const env: Record<string, string> = {
      WORK_BUCKET: this.workBucket.bucketName,
      WORK_PREFIX: settings.workPrefix,
      CONTROL_BUCKET: this.controlBucket.bucketName,
      DEFAULT_MAX_CONCURRENCY: String(settings.defaultMaxConcurrency),
      ALLOWED_SOURCE_BUCKETS: props.sourceBuckets.join(','),
      ALLOWED_DESTINATIONS: `${props.destinationBucket}/${settings.destinationPrefix}`,
    };
    if (settings.sourcePrefix !== '') env.ALLOWED_SOURCE_PREFIX = settings.sourcePrefix;
    // Batch sizes: unset, the Go defaults hold (one place); the planner writes them into the state.
    if (props.partsPerBatch !== undefined) env.PARTS_PER_BATCH = String(props.partsPerBatch);
    if (props.maxReadsPerBatch !== undefined) env.MAX_READS_PER_BATCH = String(props.maxReadsPerBatch);
    if (props.pieceSize !== undefined) env.PIECE_SIZE_BYTES = String(props.pieceSize);
    // The planner refuses options.presign without it; the finalizer signs with it.
    if (props.maxPresignSeconds !== undefined) env.MAX_PRESIGN_SECONDS = String(props.maxPresignSeconds);
    // Archives are encrypted with the destination key unless a request names another.
    if (props.destinationKmsKeyArn) env.DESTINATION_KMS_KEY_ARN = props.destinationKmsKeyArn;
    return env;
  }

  private workObjects(settings: ArchiveSettings): string {
    return `${this.workBucket.bucketArn}/${settings.workPrefix}*`;
  }

  /** A request object put under requests/ in the control bucket starts an execution. */
  private createRequestRule(): events.Rule {
    const rule = new events.Rule(this, 'RequestObjectCreated', {
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
    rule.addTarget(
      new targets.SfnStateMachine(this.stateMachine, {
        input: events.RuleTargetInput.fromObject({
          requestObject: {
            bucket: events.EventField.fromPath('$.detail.bucket.name'),
            key: events.EventField.fromPath('$.detail.object.key'),
          },
        }),
      }),
    );
    return rule;
  }

  /** Tells each target that a run ended (none: no rule). */
  private createEndedRule(endedTargets: events.IRuleTarget[]): events.Rule | undefined {
    if (endedTargets.length === 0) return undefined;
    const rule = new events.Rule(this, 'ArchiveEnded', {
      description: 's3zip: an archive run ended (its execution status change)',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: { stateMachineArn: [this.stateMachine.stateMachineArn], status: ENDED_STATUSES },
      },
    });
    for (const target of endedTargets) rule.addTarget(target);
    return rule;
  }

  /** Each suppression names the one finding it covers and why it is acceptable. */
  private addNagSuppressions(settings: ArchiveSettings, props: ArchiveWorkflowProps): void {
    const stack = Stack.of(this);
    const workObjectsFinding = `Resource::<${stack.getLogicalId(this.workBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${settings.workPrefix}*`;
    for (const name of FUNCTION_NAMES) {
      NagSuppressions.addResourceSuppressions(
        this.functions[name].role!,
        [{ id: 'AwsSolutions-IAM5', reason: functionFindingReason(name), appliesTo: this.functionFindings(name, workObjectsFinding, settings, props) }],
        true,
      );
    }
    suppressMapStateMachineFindings(
      this.stateMachine,
      FUNCTION_NAMES.map((n) => this.functions[n]),
      {
        stateMachineName: this.stateMachineName,
        invokeReason: 'Lambda invoke on <function ARN>:* allows the versions and aliases of exactly the five workflow functions.',
        workFinding: workObjectsFinding,
        workReason:
          "The Distributed Maps' ItemReaders read reads/jobs.json and parts.jsonl and their ResultWriters write results under the per-execution work prefix; keys are unknown at deploy time.",
      },
    );
  }

  /** The wildcard resources cdk-nag finds in one function's policy. */
  private functionFindings(name: FunctionName, workObjectsFinding: string, settings: ArchiveSettings, props: ArchiveWorkflowProps): string[] {
    const findings = [workObjectsFinding];
    if (name === 'reader' || name === 'worker' || name === 'finalizer') {
      findings.push(...props.sourceBuckets.map((b) => `Resource::arn:<AWS::Partition>:s3:::${b}/${settings.sourcePrefix}*`));
    }
    if (name !== 'reader') {
      findings.push(`Resource::arn:<AWS::Partition>:s3:::${props.destinationBucket}/${settings.destinationPrefix}*`);
    }
    if (name === 'planner') {
      const stack = Stack.of(this);
      findings.push(`Resource::<${stack.getLogicalId(this.controlBucket.node.defaultChild as s3.CfnBucket)}.Arn>/*`);
      findings.push(...inventoryObjectArns(props.inventoryBuckets, '<AWS::Partition>').map((a) => `Resource::${a}`));
    }
    return findings;
  }
}

function functionFindingReason(name: FunctionName): string {
  const perObjectReason = 'Object keys are per execution and unknown at deploy time; the wildcard is confined to one bucket prefix.';
  return `${name}: ${perObjectReason} ${name === 'planner' ? 'It reads no source object (it lists them)' : 'Sources are limited to the configured buckets/prefix'}, the destination to its prefix, the work bucket to the work prefix${name === 'planner' ? ', the control bucket holds only request and manifest objects, and inventory reports are read only where inventoryBuckets says' : ''}.`;
}

/**
 * Adds the stack outputs a user needs to run the workflow: `${prefix}StateMachineArn`,
 * `${prefix}ControlBucketName` and `${prefix}WorkBucketName`. A second workflow in the same
 * scope needs a prefix of its own.
 */
export function addArchiveWorkflowOutputs(scope: Construct, workflow: ArchiveWorkflow, prefix = ''): void {
  const outputs: [string, string][] = [
    ['StateMachineArn', workflow.stateMachine.stateMachineArn],
    ['ControlBucketName', workflow.controlBucket.bucketName],
    ['WorkBucketName', workflow.workBucket.bucketName],
  ];
  for (const [name] of outputs) {
    if (scope.node.tryFindChild(prefix + name)) {
      throw new Error(
        `addArchiveWorkflowOutputs(${workflow.node.path}): ${scope.node.path} already has an output ${prefix + name}; ` +
          `give each workflow's outputs a prefix of their own, e.g. addArchiveWorkflowOutputs(stack, ${workflow.node.id.replace(/[^A-Za-z0-9]/g, '')}, '${workflow.node.id.replace(/[^A-Za-z0-9]/g, '')}')`,
      );
    }
  }
  for (const [name, value] of outputs) new CfnOutput(scope, prefix + name, { value });
}
