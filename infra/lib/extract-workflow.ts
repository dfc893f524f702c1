import { CfnOutput, Duration, Size, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { EXTRACT_FUNCTION_NAMES, type ExtractFunctionName, grantExtractFunctions } from './extract-grants';
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
import { DEFAULT_FUNCTIONS_DIR, EXTRACT_ASL_PATH } from './paths';

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

export interface ExtractWorkflowProps extends MapWorkflowProps {
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
  /** @default 6,144 MB (EXTRACT_PLANNER_MEMORY), 15 minutes */
  readonly planner?: FunctionSizing;
  /** @default 1,769 MB (one vCPU), 15 minutes */
  readonly worker?: FunctionSizing;
  /** It holds every object written (key, size, CRC-32), ~0.4 GiB a million entries. @default 2,048 MB, 15 minutes */
  readonly finalizer?: FunctionSizing;
  /** Jobs per worker invocation (the planner's batchSize, read by MaxItemsPerBatchPath). @default 4 */
  readonly batchSize?: number;
}

const EXTRACT_DEFAULT_SIZING: Record<ExtractFunctionName, Required<FunctionSizing>> = {
  // 10 M entries peak at 5.7 GB without a memory limit (565 MiB a million): infra/README.md, "Sizing, measured".
  'extract-planner': { memorySize: EXTRACT_PLANNER_MEMORY, timeout: Duration.minutes(15) },
  // One full vCPU: workers inflate and hash.
  'extract-worker': { memorySize: 1769, timeout: Duration.minutes(15) },
  // ~0.4 GiB a million entries (tests/load TestLoadExtractPerMillion): 2,048 MB holds about 4 M.
  'extract-finalizer': { memorySize: 2048, timeout: Duration.minutes(15) },
  'extract-abort': { memorySize: 512, timeout: Duration.minutes(5) },
};

const EXTRACT_FUNCTION_SPECS: Record<ExtractFunctionName, { logicalId: string; description: string; sizingProp?: 'planner' | 'worker' | 'finalizer' }> = {
  'extract-planner': { logicalId: 'ExtractPlanner', description: 's3zip extract: read the central directory, refuse bad archives, write the jobs', sizingProp: 'planner' },
  'extract-worker': { logicalId: 'ExtractWorker', description: 's3zip extract: run a batch of copy and read jobs', sizingProp: 'worker' },
  'extract-finalizer': { logicalId: 'ExtractFinalizer', description: 's3zip extract: check every object was written, write the report', sizingProp: 'finalizer' },
  'extract-abort': { logicalId: 'ExtractAbort', description: "s3zip extract: abort this execution's uploads, delete its objects" },
};

const OWNER = 'ExtractWorkflow';

/** The props with their defaults applied and checked. */
interface ExtractSettings extends MapWorkflowSettings {
  readonly archivePrefix: string;
  readonly archiveSuffix: string;
  readonly destinationBucket: string;
  readonly destinationPrefix: string;
  readonly batchSize: number;
  readonly sizing: Record<ExtractFunctionName, Required<FunctionSizing>>;
}

function extractSettings(scope: Construct, props: ExtractWorkflowProps): ExtractSettings {
  const shared = mapWorkflowSettings(scope, OWNER, 'Extract', props, DEFAULT_FUNCTIONS_DIR);
  const archivePrefix = normalizePrefix(props.archivePrefix, 'incoming/');
  const destinationBucket = props.destinationBucket ?? props.archiveBucket;
  const destinationPrefix = normalizePrefix(props.destinationPrefix, 'extracted/');
  if (destinationPrefix === '') throw new Error(`${OWNER}: destinationPrefix must not be empty; leave it unset for 'extracted/'`);
  if (destinationBucket === props.archiveBucket && (archivePrefix.startsWith(destinationPrefix) || destinationPrefix.startsWith(archivePrefix))) {
    throw new Error(`${OWNER}: archivePrefix ${archivePrefix} and destinationPrefix ${destinationPrefix} overlap (an extracted .zip would start another extraction)`);
  }
  const batchSize = props.batchSize ?? 4;
  checkPositiveInteger(OWNER, 'batchSize', batchSize);
  const sizing = Object.fromEntries(
    EXTRACT_FUNCTION_NAMES.map((n) => {
      const prop = EXTRACT_FUNCTION_SPECS[n].sizingProp;
      return [n, sizingOf(prop && props[prop], EXTRACT_DEFAULT_SIZING[n])];
    }),
  ) as Record<ExtractFunctionName, Required<FunctionSizing>>;
  for (const n of EXTRACT_FUNCTION_NAMES) checkSizing(OWNER, EXTRACT_FUNCTION_SPECS[n].sizingProp ?? n, sizing[n]);
  // Only the worker runs in the Map's children.
  checkMapChildTimeouts(OWNER, shared.mapExecutionType, { worker: sizing['extract-worker'].timeout });
  return { ...shared, archivePrefix, archiveSuffix: props.archiveSuffix ?? '.zip', destinationBucket, destinationPrefix, batchSize, sizing };
}

/**
 * The extract workflow: a ZIP in S3 unpacked into objects under a prefix. Planner -> Distributed
 * Map of workers -> finalizer, abort on any failure; four functions of its own (not the archive
 * workflow's with an operation field) so each role holds only what its step does.
 */
export class ExtractWorkflow extends Construct {
  readonly stateMachine: sfn.StateMachine;
  /** The four functions by name (EXTRACT_FUNCTION_NAMES: extract-planner, extract-worker, extract-finalizer, extract-abort). */
  readonly functions: Record<string, lambda.Function>;
  readonly archiveRule: events.Rule;
  readonly stateMachineName: string;
  readonly definitionSubstitutions: Record<string, string>;
  /** The alarms and dashboard (only with the monitoring prop). */
  readonly monitoring?: WorkflowMonitoring;

  constructor(scope: Construct, id: string, props: ExtractWorkflowProps) {
    super(scope, id);
    for (const prop of ['archiveBucket', 'destinationBucket'] as const) {
      if (props[prop] !== undefined) checkBucketName(OWNER, props[prop], 'give a bare name (3 to 63 of a-z 0-9 . -) and key prefixes in archivePrefix / destinationPrefix', prop);
    }
    if (!props.workBucket) throw new Error(`${OWNER}: workBucket is required (an s3.IBucket; ArchiveWorkflow's workBucket serves)`);
    const settings = extractSettings(this, props);
    const functions = this.createFunctions(settings, props);
    this.functions = functions;
    const extractWorkPrefix = `${settings.workPrefix}extract/`;
    const workObjects = props.workBucket.arnForObjects(`${extractWorkPrefix}*`);
    grantExtractFunctions({
      functions,
      workBucket: props.workBucket,
      extractWorkPrefix,
      archiveBucket: props.archiveBucket,
      archivePrefix: settings.archivePrefix,
      destinationBucket: settings.destinationBucket,
      destinationPrefix: settings.destinationPrefix,
      archiveKmsKeyArns: props.archiveKmsKeyArns,
      destinationKmsKeyArn: props.destinationKmsKeyArn,
    });
    this.stateMachineName = settings.stateMachineName;
    // The same placeholder names as archive.asl.json, each a quoted string in the file.
    this.definitionSubstitutions = {
      PlannerFunctionArn: this.functions['extract-planner'].functionArn,
      WorkerFunctionArn: this.functions['extract-worker'].functionArn,
      FinalizerFunctionArn: this.functions['extract-finalizer'].functionArn,
      AbortFunctionArn: this.functions['extract-abort'].functionArn,
      MapExecutionType: settings.mapExecutionType,
    };
    this.stateMachine = mapStateMachine(this, {
      settings,
      aslPath: EXTRACT_ASL_PATH,
      substitutions: this.definitionSubstitutions,
      functions: Object.values(this.functions),
      invokeSid: 'InvokeExtractFunctions',
      workObjects,
      workKeyArn: props.workBucket.encryptionKey?.keyArn,
    });
    this.archiveRule = this.createArchiveRule(settings, props.archiveBucket);
    this.addNagSuppressions(settings, props);
    if (props.monitoring) this.monitoring = this.createMonitoring(props.monitoring);
  }

  /**
   * Adds this workflow's stack output to scope, as addExtractWorkflowOutputs does: the form other
   * languages can call (jsii carries methods, not functions), e.g. `extract.add_outputs(stack)` in Python.
   */
  addOutputs(scope: Construct, prefix?: string): void {
    addExtractWorkflowOutputs(scope, this, prefix);
  }

  /** Alarms and a dashboard; its log-derived metrics come from the planner's "extraction planned" and the finalizer's "extraction done" lines. */
  private createMonitoring(props: MonitoringProps): WorkflowMonitoring {
    const planner = this.functions['extract-planner'];
    const planned = (name: string, field: string) => ({ name, function: planner, msg: 'extraction planned', field });
    return new WorkflowMonitoring(
      this,
      'Monitoring',
      {
        stateMachine: this.stateMachine,
        functions: Object.values(this.functions),
        namespace: `s3zip/${this.stateMachineName}`,
        loggedMetrics: [
          planned('JobsPlanned', 'jobs'),
          { name: 'ObjectsExtracted', function: this.functions['extract-finalizer'], msg: 'extraction done', field: 'objects' },
          planned('BytesStreamed', 'read'),
          planned('BytesCopied', 'copied'),
        ],
        charts: [
          { title: 'Jobs planned, objects extracted', metrics: ['JobsPlanned', 'ObjectsExtracted'] },
          { title: 'Archive bytes read by workers and copied by S3 (as planned)', metrics: ['BytesStreamed', 'BytesCopied'] },
        ],
      },
      props,
    );
  }

  private createFunctions(settings: ExtractSettings, props: ExtractWorkflowProps): Record<ExtractFunctionName, lambda.Function> {
    const environment: Record<string, string> = {
      WORK_BUCKET: props.workBucket.bucketName,
      WORK_PREFIX: settings.workPrefix,
      EXTRACT_ARCHIVE_PREFIX: settings.archivePrefix,
      EXTRACT_DESTINATION_BUCKET: settings.destinationBucket,
      EXTRACT_DESTINATION_PREFIX: settings.destinationPrefix,
      ALLOWED_ARCHIVES: `${props.archiveBucket}/${settings.archivePrefix}`,
      ALLOWED_DESTINATIONS: `${settings.destinationBucket}/${settings.destinationPrefix}`,
      BATCH_SIZE: String(settings.batchSize),
      DEFAULT_MAX_CONCURRENCY: String(settings.defaultMaxConcurrency),
    };
    const make = (name: ExtractFunctionName) =>
      goFunction(this, EXTRACT_FUNCTION_SPECS[name].logicalId, {
        owner: OWNER,
        name,
        functionsDir: settings.functionsDir,
        description: EXTRACT_FUNCTION_SPECS[name].description,
        ...settings.sizing[name],
        environment,
        logRetention: settings.logRetention,
        removalPolicy: settings.removalPolicy,
        ephemeralStorageSize: name === 'extract-planner' ? EXTRACT_PLANNER_TMP : undefined,
      });
    return {
      'extract-planner': make('extract-planner'),
      'extract-worker': make('extract-worker'),
      'extract-finalizer': make('extract-finalizer'),
      'extract-abort': make('extract-abort'),
    };
  }

  /** A new <archivePrefix>*<archiveSuffix> in the archive bucket starts an execution. */
  private createArchiveRule(settings: ExtractSettings, archiveBucket: string): events.Rule {
    const rule = new events.Rule(this, 'ArchiveObjectCreated', {
      description: `s3zip: extract each ${settings.archivePrefix}*${settings.archiveSuffix} created in ${archiveBucket}`,
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: {
          bucket: { name: [archiveBucket] },
          object: { key: events.Match.wildcard(`${settings.archivePrefix}*${settings.archiveSuffix}`) },
        },
      },
    });
    // No destination: the planner derives <destinationPrefix><name>/ from the key.
    rule.addTarget(
      new targets.SfnStateMachine(this.stateMachine, {
        input: events.RuleTargetInput.fromObject({
          archive: { bucket: events.EventField.fromPath('$.detail.bucket.name'), key: events.EventField.fromPath('$.detail.object.key') },
        }),
      }),
    );
    return rule;
  }

  /** Each suppression names the finding it covers. */
  private addNagSuppressions(settings: ExtractSettings, props: ExtractWorkflowProps): void {
    const stack = Stack.of(this);
    const workFinding = `Resource::<${stack.getLogicalId(props.workBucket.node.defaultChild as never)}.Arn>/${settings.workPrefix}extract/*`;
    const reason = 'Object keys are per archive and per execution, unknown at deploy time; each wildcard is confined to one bucket prefix (archives, destination, work).';
    const appliesTo = [
      workFinding,
      `Resource::arn:<AWS::Partition>:s3:::${props.archiveBucket}/${settings.archivePrefix}*`,
      `Resource::arn:<AWS::Partition>:s3:::${settings.destinationBucket}/${settings.destinationPrefix}*`,
    ];
    for (const fn of Object.values(this.functions)) {
      NagSuppressions.addResourceSuppressions(fn.role!, [{ id: 'AwsSolutions-IAM5', reason, appliesTo }], true);
    }
    suppressMapStateMachineFindings(this.stateMachine, Object.values(this.functions), {
      stateMachineName: this.stateMachineName,
      invokeReason: 'Lambda invoke on <function ARN>:* allows the versions and aliases of exactly the four extract functions.',
      workFinding,
      workReason: 'The Map ItemReader and ResultWriter use the per-execution work prefix.',
    });
  }
}

/**
 * Adds the stack output a user needs to run the extract workflow: `${prefix}StateMachineArn`
 * (prefix 'Extract' by default, so it stands beside addArchiveWorkflowOutputs' outputs). A second
 * extract workflow in the same scope needs a prefix of its own.
 */
export function addExtractWorkflowOutputs(scope: Construct, workflow: ExtractWorkflow, prefix = 'Extract'): void {
  const outputs: [string, string][] = [['StateMachineArn', workflow.stateMachine.stateMachineArn]];
  for (const [name] of outputs) {
    if (scope.node.tryFindChild(prefix + name)) {
      const id = workflow.node.id.replace(/[^A-Za-z0-9]/g, '');
      throw new Error(
        `addExtractWorkflowOutputs(${workflow.node.path}): ${scope.node.path} already has an output ${prefix + name}; ` +
          `give each workflow's outputs a prefix of their own, e.g. addExtractWorkflowOutputs(stack, ${id}, '${id}')`,
      );
    }
  }
  for (const [name, value] of outputs) new CfnOutput(scope, prefix + name, { value });
}
