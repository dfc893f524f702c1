/**
 * Shared fixtures for the CDK tests: function asset folders, a synthesized stack, and small
 * readers for CloudFormation intrinsics.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Aspects, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { FUNCTION_NAMES } from '../../infra/lib/archive-grants';
import { ArchiveWorkflow, addArchiveWorkflowOutputs, type ArchiveWorkflowProps } from '../../infra/lib/archive-workflow';
import { EXTRACT_FUNCTION_NAMES } from '../../infra/lib/extract-grants';
import { DEFAULT_FUNCTIONS_DIR } from '../../infra/lib/paths';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

let fakeFunctionsDir: string | undefined;

/** Temp folders made by this process (cloud assemblies, fake assets), removed at exit. */
const tempDirs: string[] = [];
process.on('exit', () => {
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

/**
 * Folder with <name>/bootstrap for the five functions. The real binaries (dist/functions, from
 * `make lambdas`) are used when all five exist. Otherwise -- e.g. `npm test` before the Go
 * build, or on a machine without Go -- each function gets a temp folder holding a placeholder
 * `bootstrap` file: Code.fromAsset only hashes and copies the folder, it never runs or
 * inspects the binary, so the synthesized template is the same apart from asset hashes.
 */
export function functionsDir(): string {
  const names = [...FUNCTION_NAMES, ...EXTRACT_FUNCTION_NAMES];
  if (names.every((n) => fs.existsSync(path.join(DEFAULT_FUNCTIONS_DIR, n, 'bootstrap')))) {
    return DEFAULT_FUNCTIONS_DIR;
  }
  if (!fakeFunctionsDir) {
    fakeFunctionsDir = tempDir('s3zip-cdk-functions-');
    for (const name of names) {
      fs.mkdirSync(path.join(fakeFunctionsDir, name));
      fs.writeFileSync(path.join(fakeFunctionsDir, name, 'bootstrap'), `#!/bin/sh\n# placeholder for ${name}\n`, {
        mode: 0o755,
      });
    }
  }
  return fakeFunctionsDir;
}

export const SOURCE_BUCKETS = ['s3zip-test-photos', 's3zip-test-videos'];
export const DESTINATION_BUCKET = 's3zip-test-archives';

export interface Built {
  app: App;
  stack: Stack;
  workflow: ArchiveWorkflow;
  template: Template;
  /** Raw synthesized template. */
  json: { Resources: Record<string, CfnResource>; Outputs?: Record<string, unknown> };
  /** Cloud assembly folder (holds the staged ASL asset). */
  outdir: string;
}

export interface CfnResource {
  Type: string;
  Properties?: Record<string, any>;
  Metadata?: Record<string, any>;
  DependsOn?: string[];
}

/** Synthesizes one stack with the workflow (and cdk-nag AwsSolutions checks unless nag=false). */
export function build(
  overrides: Partial<ArchiveWorkflowProps> | ((stack: Stack) => Partial<ArchiveWorkflowProps>) = {},
  opts: { nag?: boolean; extra?: (stack: Stack) => void } = {},
): Built {
  const outdir = tempDir('s3zip-cdk-out-');
  const app = new App({
    outdir,
    context: { '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy': true },
  });
  const stack = new Stack(app, 'TestStack', { env: { account: '123456789012', region: 'eu-west-1' } });
  const workflow = new ArchiveWorkflow(stack, 'ArchiveWorkflow', {
    sourceBuckets: SOURCE_BUCKETS,
    destinationBucket: DESTINATION_BUCKET,
    functionsDir: functionsDir(),
    ...(typeof overrides === 'function' ? overrides(stack) : overrides),
  });
  addArchiveWorkflowOutputs(stack, workflow);
  opts.extra?.(stack);
  if (opts.nag !== false) Aspects.of(app).add(new AwsSolutionsChecks());
  const template = Template.fromStack(stack);
  return { app, stack, workflow, template, json: template.toJSON() as Built['json'], outdir };
}

export function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as any);
}

/**
 * Renders a CloudFormation value to a readable string: Fn::Join is joined, GetAtt becomes
 * <Logical.Attr>, Ref becomes <Logical> (pseudo parameters keep their AWS:: name).
 */
export function render(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const v = value as Record<string, any>;
    if ('Fn::Join' in v) return (v['Fn::Join'][1] as unknown[]).map(render).join(v['Fn::Join'][0]);
    if ('Fn::GetAtt' in v) return `<${v['Fn::GetAtt'][0]}.${v['Fn::GetAtt'][1]}>`;
    if ('Ref' in v) return `<${v.Ref}>`;
  }
  return JSON.stringify(value);
}

export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource?: unknown;
  Condition?: Record<string, any>;
  Sid?: string;
  Principal?: unknown;
}

export function list<T>(x: T | T[] | undefined): T[] {
  return x === undefined ? [] : Array.isArray(x) ? x : [x];
}

/** Every identity-policy statement in the template with the policy and roles it belongs to. */
export function identityStatements(json: Built['json']): { policy: string; roles: string[]; statement: Statement }[] {
  const out: { policy: string; roles: string[]; statement: Statement }[] = [];
  for (const [id, r] of Object.entries(json.Resources)) {
    if (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy') {
      const roles = list(r.Properties!.Roles).map((x: any) => (x.Ref as string) ?? render(x));
      for (const s of list(r.Properties!.PolicyDocument.Statement)) out.push({ policy: id, roles, statement: s as Statement });
    }
    if (r.Type === 'AWS::IAM::Role') {
      for (const p of list<any>(r.Properties!.Policies)) {
        for (const s of list(p.PolicyDocument.Statement)) out.push({ policy: `${id}/${p.PolicyName}`, roles: [id], statement: s as Statement });
      }
    }
  }
  return out;
}

/** Statements of the policies attached to one role. */
export function statementsOfRole(json: Built['json'], roleLogicalId: string): Statement[] {
  return identityStatements(json)
    .filter((s) => s.roles.includes(roleLogicalId))
    .map((s) => s.statement);
}

export function resourcesOfType(json: Built['json'], type: string): [string, CfnResource][] {
  return Object.entries(json.Resources).filter(([, r]) => r.Type === type);
}
