/**
 * What the two workflows share: a planner, a Distributed Map of workers over a work bucket, a
 * finalizer and an abort, each a Go function; the props that shape that, the state machine around
 * the ASL file with the grants its Map needs, and the ARN helpers and checks both use.
 */
import { ArnFormat, Aws, Duration, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import type { MonitoringProps } from './monitoring';

/** A function's memory and timeout; unset fields keep the workflow's default for that function. */
export interface FunctionSizing {
  /** MB; 1,769 MB is one full vCPU. */
  readonly memorySize?: number;
  readonly timeout?: Duration;
}

/** The props both workflows take the same way. */
export interface MapWorkflowProps {
  /**
   * Prefix in the work bucket for plans, jobs and Map results (the extract workflow works under
   * <workPrefix>extract/<execution>/). A trailing '/' is added when missing. @default 's3zip-work/'
   */
  readonly workPrefix?: string;
  /** Folder holding <name>/bootstrap for each function. @default the binaries shipped in the package (in this repository: dist/functions, `make lambdas`) */
  readonly functionsDir?: string;
  /** Map concurrency when a request sets none (env DEFAULT_MAX_CONCURRENCY). @default 100 */
  readonly defaultMaxConcurrency?: number;
  /**
   * Child execution type of the Distributed Map. EXPRESS children are cheaper but end after
   * 5 minutes including retries, so EXPRESS requires the functions the Map's children run to time
   * out within 4 minutes (checked at synth).
   * @default 'STANDARD'
   */
  readonly mapExecutionType?: 'STANDARD' | 'EXPRESS';
  /**
   * Name of the state machine; it is set explicitly so the role can name the Map's child
   * executions without a dependency cycle. It also names the log group and the metrics namespace,
   * so two workflows of one kind in a stack need a name each (a second one without is refused at
   * synth). @default '<stack name>-Archive' or '<stack name>-Extract'
   */
  readonly stateMachineName?: string;
  /** Of the buckets and log groups the workflow creates. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** Retention of the state machine's and the functions' logs. @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Alarms on failed and timed-out runs and on throttled function invocations, and a dashboard of
   * runs, parts and bytes streamed and copied (`{}` for the defaults). @default none
   */
  readonly monitoring?: MonitoringProps;
}

/** MapWorkflowProps with their defaults applied and checked. */
export interface MapWorkflowSettings {
  readonly workPrefix: string;
  readonly functionsDir: string;
  readonly defaultMaxConcurrency: number;
  readonly mapExecutionType: 'STANDARD' | 'EXPRESS';
  readonly stateMachineName: string;
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
}

/** Applies the shared defaults; `owner` names the construct in errors, `kind` ends the default state machine name. */
export function mapWorkflowSettings(scope: Construct, owner: string, kind: string, props: MapWorkflowProps, functionsDir: string): MapWorkflowSettings {
  const workPrefix = normalizePrefix(props.workPrefix, 's3zip-work/');
  if (workPrefix === '') throw new Error(`${owner}: workPrefix must not be empty; leave it unset for 's3zip-work/'`);
  const mapExecutionType = props.mapExecutionType ?? 'STANDARD';
  if (mapExecutionType !== 'STANDARD' && mapExecutionType !== 'EXPRESS') {
    throw new Error(`${owner}: mapExecutionType must be 'STANDARD' or 'EXPRESS', got ${JSON.stringify(mapExecutionType)}`);
  }
  const defaultMaxConcurrency = props.defaultMaxConcurrency ?? 100;
  if (!Number.isInteger(defaultMaxConcurrency) || defaultMaxConcurrency < 1 || defaultMaxConcurrency > 10000) {
    throw new Error(`${owner}: defaultMaxConcurrency must be a whole number from 1 to 10000 (a Distributed Map's limit), got ${defaultMaxConcurrency}`);
  }
  const stateMachineName = props.stateMachineName ?? `${Stack.of(scope).stackName}-${kind}`.slice(0, 80);
  if (!Token.isUnresolved(stateMachineName) && (stateMachineName.length < 1 || stateMachineName.length > 80 || /[\s<>{}[\]?*"#%\\^|~`$&,;:/]/.test(stateMachineName))) {
    throw new Error(`${owner}: stateMachineName must be 1 to 80 characters without spaces or any of <>{}[]?*"#%\\^|~\`$&,;:/ (Step Functions' rule), got ${JSON.stringify(stateMachineName)}`);
  }
  claimStateMachineName(scope, owner, kind, stateMachineName);
  return {
    workPrefix,
    functionsDir: props.functionsDir ?? functionsDir,
    defaultMaxConcurrency,
    mapExecutionType,
    stateMachineName,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    logRetention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
  };
}

/** The state machine names each stack's workflows have taken, with the path of the construct that took each. */
const takenNames = new WeakMap<Stack, Map<string, string>>();

/**
 * Refuses a second workflow in one stack with the same state machine name: the name is also its
 * log group's (/aws/vendedlogs/states/<name>) and its metrics namespace, so the stack would
 * synthesize and then fail to deploy (or mix two workflows' metrics).
 */
function claimStateMachineName(scope: Construct, owner: string, kind: string, name: string): void {
  if (Token.isUnresolved(name)) return;
  const stack = Stack.of(scope);
  const taken = takenNames.get(stack) ?? new Map<string, string>();
  takenNames.set(stack, taken);
  const other = taken.get(name);
  if (other !== undefined) {
    const suggestion = `${stack.stackName}-${scope.node.id.replace(/[^A-Za-z0-9_-]/g, '')}-${kind}`.slice(0, 80);
    throw new Error(
      `${owner} ${scope.node.path}: stateMachineName ${JSON.stringify(name)} is already taken by ${other} in stack ${stack.stackName} ` +
        `(the name is also the log group /aws/vendedlogs/states/${name}'s, so the stack would not deploy); ` +
        `give each workflow in a stack its own stateMachineName, e.g. '${suggestion}'`,
    );
  }
  taken.set(name, scope.node.path);
}

/** A function's sizing: what the props set, else the workflow's default. */
export function sizingOf(set: FunctionSizing | undefined, fallback: Required<FunctionSizing>): Required<FunctionSizing> {
  return { memorySize: set?.memorySize ?? fallback.memorySize, timeout: set?.timeout ?? fallback.timeout };
}

/** Refuses sizes Lambda refuses, naming the prop: memory 128 to 10,240 MB, timeout 1 s to 15 minutes. */
export function checkSizing(owner: string, prop: string, s: Required<FunctionSizing>): void {
  if (!Number.isInteger(s.memorySize) || s.memorySize < 128 || s.memorySize > 10240) {
    throw new Error(`${owner}: ${prop}.memorySize must be a whole number of MB from 128 to 10240 (Lambda's range), got ${s.memorySize}`);
  }
  const seconds = s.timeout.toSeconds();
  if (seconds < 1 || seconds > 900) {
    throw new Error(`${owner}: ${prop}.timeout must be from 1 second to 15 minutes (Lambda's limit), got ${seconds}s`);
  }
}

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

/** Refuses a prop that is set but not a whole number of at least 1. */
export function checkPositiveInteger(owner: string, name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
    throw new Error(`${owner}: ${name} must be a positive integer, got ${value}`);
  }
}

/** Whether name can be an S3 bucket name: 3 to 63 of a-z 0-9 . -, a letter or digit at each end. */
export function isBucketName(name: string): boolean {
  return /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name);
}

/**
 * Refuses what cannot be an S3 bucket name (a missing value, an ARN, an s3:// URL, a name with a
 * key), naming the prop when given and saying what to give instead (fix). A token passes: a
 * bucket of the app, named at deploy time.
 */
export function checkBucketName(owner: string, name: string | undefined, fix: string, prop?: string): void {
  if (Token.isUnresolved(name)) return;
  if (typeof name !== 'string' || !isBucketName(name)) {
    throw new Error(`${owner}: ${prop === undefined ? '' : `${prop} `}${JSON.stringify(name)} is not a bucket name; ${fix}`);
  }
}

/** A key prefix without leading slashes and with a trailing one ('' stays ''); `fallback` when unset. */
export function normalizePrefix(prefix: string | undefined, fallback = ''): string {
  const p = (prefix ?? fallback).replace(/^\/+/, '');
  return p === '' || p.endsWith('/') ? p : `${p}/`;
}

/** `arn:<partition>:s3:::<bucket><suffix>` without importing the bucket (so no '*' sneaks in). */
export function s3Arn(bucket: string, suffix = ''): string {
  return `arn:${Aws.PARTITION}:s3:::${bucket}${suffix}`;
}

export function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/** Lists the work prefix (s3:ListBucket confined to it by s3:prefix). */
export function workPrefixList(workBucketArn: string, prefixPattern: string): iam.PolicyStatement {
  return new iam.PolicyStatement({
    sid: 'WorkPrefixList',
    actions: ['s3:ListBucket'],
    resources: [workBucketArn],
    conditions: { StringLike: { 's3:prefix': [prefixPattern] } },
  });
}

/** A statement on the given KMS keys. */
export function kmsUse(sid: string, actions: string[], keyArns: string[]): iam.PolicyStatement {
  return new iam.PolicyStatement({ sid, actions, resources: keyArns });
}

/** Adds each statement to the function's role. */
export function grant(fn: lambda.Function, statements: iam.PolicyStatement[]): void {
  for (const s of statements) fn.addToRolePolicy(s);
}

/** What a workflow's state machine is made of. */
export interface MapStateMachineSpec {
  readonly settings: MapWorkflowSettings;
  readonly aslPath: string;
  /** Every ASL placeholder's value. */
  readonly substitutions: Record<string, string>;
  /** The functions its states invoke. */
  readonly functions: lambda.Function[];
  /** Sid of the statement that lets it invoke them. */
  readonly invokeSid: string;
  /** The objects its Map's ItemReader reads and ResultWriter writes. */
  readonly workObjects: string;
  /** The work bucket's customer-managed key, if any. */
  readonly workKeyArn?: string;
}

/**
 * The state machine, STANDARD, with X-Ray and its own log group (construct IDs 'StateMachine'
 * and 'StateMachineLogs' under `scope`), and the grants of its Distributed Map: invoke its
 * functions, read the items and write the results under the work prefix, start and control its
 * own child executions.
 */
export function mapStateMachine(scope: Construct, spec: MapStateMachineSpec): sfn.StateMachine {
  const { stateMachineName, logRetention, removalPolicy } = spec.settings;
  const logGroup = new logs.LogGroup(scope, 'StateMachineLogs', {
    // Step Functions vended logs require the /aws/vendedlogs/ prefix to keep resource policies small.
    logGroupName: `/aws/vendedlogs/states/${stateMachineName}`,
    retention: logRetention,
    removalPolicy,
  });
  const sm = new sfn.StateMachine(scope, 'StateMachine', {
    stateMachineName,
    stateMachineType: sfn.StateMachineType.STANDARD,
    definitionBody: sfn.DefinitionBody.fromFile(spec.aslPath),
    definitionSubstitutions: spec.substitutions,
    tracingEnabled: true,
    logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
  });
  for (const s of mapStateMachineStatements(Stack.of(scope), spec)) sm.addToRolePolicy(s);
  return sm;
}

function mapStateMachineStatements(stack: Stack, spec: MapStateMachineSpec): iam.PolicyStatement[] {
  const { stateMachineName } = spec.settings;
  // Built from the name, not from the StateMachine's Ref/Arn: the role must exist before the
  // state machine, so referencing the state machine here would be a cycle.
  const stateMachineArn = stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: stateMachineName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  // Map Run children are named '<state machine>/<map run>:<id>'; the Step Functions guide
  // ("IAM policies for using Distributed Map states") has shown both '<name>/*' and '<name>:*'
  // for DescribeExecution/StopExecution, so both forms are granted, each confined to this
  // state machine's executions.
  const childExecutionsArns = ['/*', ':*'].map((suffix) =>
    stack.formatArn({ service: 'states', resource: 'execution', resourceName: `${stateMachineName}${suffix}`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
  );
  return [
    new iam.PolicyStatement({ sid: spec.invokeSid, actions: ['lambda:InvokeFunction'], resources: spec.functions.flatMap((fn) => [fn.functionArn, `${fn.functionArn}:*`]) }),
    new iam.PolicyStatement({ sid: 'MapItemReader', actions: ['s3:GetObject'], resources: [spec.workObjects] }),
    new iam.PolicyStatement({
      sid: 'MapResultWriter',
      actions: ['s3:PutObject', 's3:GetObject', 's3:ListMultipartUploadParts', 's3:AbortMultipartUpload'],
      resources: [spec.workObjects],
    }),
    new iam.PolicyStatement({ sid: 'MapChildExecutionsStart', actions: ['states:StartExecution'], resources: [stateMachineArn] }),
    // RedriveExecution: a redriven parent redrives its failed Map Run's unsuccessful children
    // (Step Functions guide, "Redriving Map Runs", IAM permissions).
    new iam.PolicyStatement({ sid: 'MapChildExecutionsControl', actions: ['states:DescribeExecution', 'states:StopExecution', 'states:RedriveExecution'], resources: childExecutionsArns }),
    // ItemReader reads, ResultWriter writes.
    ...(spec.workKeyArn ? [kmsUse('WorkBucketKey', ['kms:Decrypt', 'kms:GenerateDataKey'], [spec.workKeyArn])] : []),
  ];
}

/** The cdk-nag findings on a Map state machine's role, each with why it is acceptable. */
export interface MapStateMachineFindings {
  /** Why lambda:InvokeFunction on <function ARN>:* is fine. */
  readonly invokeReason: string;
  /** The state machine's name (its executions' ARNs start with it). */
  readonly stateMachineName: string;
  /** The work-objects finding and why it is fine. */
  readonly workFinding: string;
  readonly workReason: string;
}

export function suppressMapStateMachineFindings(sm: sfn.StateMachine, functions: lambda.Function[], findings: MapStateMachineFindings): void {
  const stack = Stack.of(sm);
  NagSuppressions.addResourceSuppressions(
    sm.role,
    [
      {
        id: 'AwsSolutions-IAM5',
        reason: findings.invokeReason,
        appliesTo: functions.map((fn) => `Resource::<${stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction)}.Arn>:*`),
      },
      { id: 'AwsSolutions-IAM5', reason: findings.workReason, appliesTo: [findings.workFinding] },
      {
        id: 'AwsSolutions-IAM5',
        reason:
          "Distributed Map child executions are named '<state machine>/<map run>:<uuid>' at run time; the wildcard covers only this state machine's executions.",
        // Region and account are tokens in an environment-agnostic stack and literals otherwise.
        appliesTo: [{ regex: `/^Resource::arn:<AWS::Partition>:states:[^/]+:execution:${escapeRegex(findings.stateMachineName)}(\\/|:)\\*$/g` }],
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
