#!/usr/bin/env node
/**
 * Writes s3zip as a standalone CloudFormation template, for teams that deploy without CDK
 * (`make cfn-template`; docs/deploy.md, "Without CDK"):
 *
 *   <out>/s3zip.template.json       both workflows; Parameters for the buckets, prefixes, KMS key, monitoring
 *   <out>/functions/<name>/bootstrap the nine Lambda binaries (each function's Code is its directory)
 *   <out>/statemachine/*.asl.json    the definitions (DefinitionS3Location)
 *
 * `aws cloudformation package` uploads the local paths and `aws cloudformation deploy` deploys the
 * result. Usage: tsx infra/bin/cfn-template.ts --out DIR [--functions DIR (default dist/functions)]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Aws, CfnResource, DefaultStackSynthesizer, Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
// The construct library by its package name, as app.ts imports it (tsconfig.json maps it to lib/index.ts).
import { ArchiveWorkflow, addArchiveWorkflowOutputs, addExtractWorkflowOutputs, EXTRACT_FUNCTION_NAMES, ExtractWorkflow, FUNCTION_NAMES } from 's3zip-cdk';
import { CONDITIONS, type LocalAssets, PLACEHOLDERS, type ResourceConditions, standaloneTemplate, type TemplateJson } from './standalone';

const STACK_ID = 'S3ZipStack';
const TEMPLATE_FILE = 's3zip.template.json';
const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** The ASL files, copied next to the template. */
const ASL_FILES = ['archive.asl.json', 'extract.asl.json'];
const DESCRIPTION = 's3zip: many S3 objects into one ZIP in S3, and ZIPs in S3 into objects (Step Functions; standalone template)';

/** The stack synthesized with PLACEHOLDERS, what the generator needs to know of it, and its template. */
function synthesize(functionsDir: string): { template: TemplateJson; assets: LocalAssets; conditions: ResourceConditions } {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 's3zip-cfn-'));
  try {
    const app = new App({
      outdir,
      analyticsReporting: false,
      context: { '@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy': true, '@aws-cdk/aws-iam:minimizePolicies': false },
    });
    // The default synthesizer without its bootstrap version rule: standalone.ts points its asset references (the
    // bootstrap bucket) at local paths. BootstraplessSynthesizer refuses file assets, which the functions are.
    const stack = new Stack(app, STACK_ID, { synthesizer: new DefaultStackSynthesizer({ generateBootstrapVersionRule: false }) });
    const key = PLACEHOLDERS.kmsKeyArn;
    const archive = new ArchiveWorkflow(stack, 'ArchiveWorkflow', {
      sourceBuckets: [...PLACEHOLDERS.sourceBuckets],
      sourcePrefix: PLACEHOLDERS.sourcePrefix,
      destinationBucket: PLACEHOLDERS.destinationBucket,
      destinationPrefix: PLACEHOLDERS.destinationPrefix,
      functionsDir,
      stateMachineName: `${Aws.STACK_NAME}-Archive`,
      encryptionKey: kms.Key.fromKeyArn(stack, 'WorkKey', key),
      sourceKmsKeyArns: [key],
      destinationKmsKeyArn: key,
      monitoring: {},
    });
    addArchiveWorkflowOutputs(stack, archive);
    const extract = new ExtractWorkflow(stack, 'ExtractWorkflow', {
      archiveBucket: PLACEHOLDERS.extractBucket,
      archivePrefix: PLACEHOLDERS.extractArchivePrefix,
      destinationBucket: PLACEHOLDERS.extractDestinationBucket,
      destinationPrefix: PLACEHOLDERS.extractDestinationPrefix,
      workBucket: archive.workBucket,
      functionsDir,
      stateMachineName: `${Aws.STACK_NAME}-Extract`,
      archiveKmsKeyArns: [key],
      destinationKmsKeyArn: key,
      monitoring: {},
    });
    addExtractWorkflowOutputs(stack, extract);
    // Which resources (and outputs) exist only under a condition of the standalone template.
    const conditions: ResourceConditions = { ExtractStateMachineArn: CONDITIONS.extract };
    const under = (scope: Construct | undefined, condition: string) => {
      for (const c of scope?.node.findAll() ?? []) {
        if (c instanceof CfnResource) conditions[stack.getLogicalId(c)] = condition;
      }
    };
    under(extract, CONDITIONS.extract);
    under(archive.monitoring, CONDITIONS.monitoring);
    under(extract.monitoring, CONDITIONS.extractMonitoring); // after extract: its monitoring needs both

    const logicalId = (c: Construct) => stack.getLogicalId(c.node.defaultChild as CfnResource);
    const functions: Record<string, string> = {};
    for (const name of FUNCTION_NAMES) functions[logicalId(archive.functions[name])] = `functions/${name}`;
    for (const name of EXTRACT_FUNCTION_NAMES) functions[logicalId(extract.functions[name])] = `functions/${name}`;
    const definitions = {
      [logicalId(archive.stateMachine)]: 'statemachine/archive.asl.json',
      [logicalId(extract.stateMachine)]: 'statemachine/extract.asl.json',
    };
    const assembly = app.synth();
    const template = JSON.parse(fs.readFileSync(assembly.getStackByName(stack.stackName).templateFullPath, 'utf8'));
    return { template, assets: { functions, definitions }, conditions };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

function main(argv: string[]): void {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const out = arg('--out');
  if (!out) throw new Error('usage: tsx infra/bin/cfn-template.ts --out DIR [--functions DIR]');
  const functionsDir = path.resolve(arg('--functions') ?? path.join(REPO_ROOT, 'dist', 'functions'));
  const { template, assets, conditions } = synthesize(functionsDir);
  const standalone = standaloneTemplate(template, assets, conditions, DESCRIPTION);
  fs.mkdirSync(out, { recursive: true });
  for (const dir of Object.values(assets.functions)) {
    fs.mkdirSync(path.join(out, dir), { recursive: true });
    fs.copyFileSync(path.join(functionsDir, path.basename(dir), 'bootstrap'), path.join(out, dir, 'bootstrap'));
    fs.chmodSync(path.join(out, dir, 'bootstrap'), 0o755);
  }
  fs.mkdirSync(path.join(out, 'statemachine'), { recursive: true });
  for (const file of ASL_FILES) {
    fs.copyFileSync(path.join(REPO_ROOT, 'statemachine', file), path.join(out, 'statemachine', file));
  }
  fs.writeFileSync(path.join(out, TEMPLATE_FILE), `${JSON.stringify(standalone, null, 1)}\n`);
  console.log(`wrote ${path.join(out, TEMPLATE_FILE)} (${Object.keys(standalone.Resources).length} resources, ${Object.keys(standalone.Parameters).length} parameters)`);
}

main(process.argv.slice(2));
