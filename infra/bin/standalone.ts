/**
 * Turns the template CDK synthesizes for s3zip's stack into a standalone CloudFormation template:
 * the values a deployment chooses become Parameters, what it may leave out Conditions, and the
 * bootstrap assets local paths that `aws cloudformation package` uploads.
 *
 * The constructs are synthesized with placeholder values (PLACEHOLDERS: valid bucket names, prefixes
 * and a key ARN, so every check the constructs make still runs); this module replaces each
 * placeholder in the synthesized JSON with its parameter. Pure: JSON in, JSON out.
 */

/** A CloudFormation template as JSON. */
export type TemplateJson = Record<string, any>;

/** How many source buckets the SourceBuckets parameter may name (each gets its own IAM resources). */
export const MAX_SOURCE_BUCKETS = 5;

const BUCKET = '[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]';
/** A key prefix: empty, or not starting with '/' and ending with one. */
const PREFIX = '^$|^[^/].*/$';

/** The value each construct prop is synthesized with, and the template expression that replaces it. */
export const PLACEHOLDERS = {
  sourceBuckets: Array.from({ length: MAX_SOURCE_BUCKETS }, (_, i) => `s3zip-param-sourcebucket${i + 1}`),
  sourcePrefix: 's3zip-param-sourceprefix/',
  destinationBucket: 's3zip-param-destinationbucket',
  destinationPrefix: 's3zip-param-destinationprefix/',
  kmsKeyArn: 'arn:aws:kms:us-east-1:111111111111:key/5a21b0de-0000-4000-8000-00000000f00d', // a key ARN in form, so CDK's own validation holds
  extractBucket: 's3zip-param-extractbucket',
  extractArchivePrefix: 's3zip-param-extractprefix/',
  extractDestinationBucket: 's3zip-param-extractdestinationbucket',
  extractDestinationPrefix: 's3zip-param-extractdestinationprefix/',
} as const;

/** The template's Parameters, in the order the console shows them. */
export const PARAMETERS: TemplateJson = {
  SourceBuckets: {
    Type: 'String',
    Description: `Buckets the archive workflow may list and read, comma-separated (1 to ${MAX_SOURCE_BUCKETS} names, no spaces)`,
    AllowedPattern: `^${BUCKET}(,${BUCKET}){0,${MAX_SOURCE_BUCKETS - 1}}$`,
    ConstraintDescription: `1 to ${MAX_SOURCE_BUCKETS} bucket names (3 to 63 of a-z 0-9 . -) separated by commas, no spaces, no s3:// and no key`,
  },
  SourcePrefix: {
    Type: 'String',
    Default: '',
    Description: "Only keys under this prefix of the source buckets are read (ending in '/'); empty: whole buckets",
    AllowedPattern: PREFIX,
    ConstraintDescription: "empty, or a key prefix ending in '/' that does not start with one (photos/)",
  },
  DestinationBucket: {
    Type: 'String',
    Description: 'Bucket archives are written to (add an AbortIncompleteMultipartUpload lifecycle rule to it)',
    AllowedPattern: `^${BUCKET}$`,
    ConstraintDescription: 'a bucket name (3 to 63 of a-z 0-9 . -), no s3:// and no key',
  },
  DestinationPrefix: {
    Type: 'String',
    Default: '',
    Description: "Archives may only be written under this prefix (ending in '/'); empty: the whole bucket",
    AllowedPattern: PREFIX,
    ConstraintDescription: "empty, or a key prefix ending in '/' that does not start with one (zips/)",
  },
  KmsKeyArn: {
    Type: 'String',
    Default: '',
    Description:
      'Customer-managed KMS key of your objects: the sources, the archives and, for extract, the ZIPs and the objects written are encrypted with it, and so are the work and control buckets this stack creates; empty: none (SSE-S3)',
    AllowedPattern: '^$|^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$',
    ConstraintDescription: 'empty, or a key ARN (arn:aws:kms:<region>:<account>:key/<id>), not an alias',
  },
  Monitoring: {
    Type: 'String',
    Default: 'false',
    AllowedValues: ['true', 'false'],
    Description: "'true': alarms on failed and timed-out runs, throttled functions and S3 SlowDowns, and a dashboard for each workflow",
  },
  ExtractBucket: {
    Type: 'String',
    Default: '',
    Description: 'Bucket whose new ZIPs under ExtractArchivePrefix are extracted (turn on its EventBridge notifications); empty: no extract workflow',
    AllowedPattern: `^$|^${BUCKET}$`,
    ConstraintDescription: 'empty, or a bucket name (3 to 63 of a-z 0-9 . -)',
  },
  ExtractArchivePrefix: {
    Type: 'String',
    Default: 'incoming/',
    Description: "ZIPs created under this prefix of ExtractBucket are extracted (ending in '/')",
    AllowedPattern: '^[^/].*/$',
    ConstraintDescription: "a key prefix ending in '/' that does not start with one",
  },
  ExtractDestinationBucket: {
    Type: 'String',
    Default: '',
    Description: 'Bucket the extracted objects are written to; empty: ExtractBucket',
    AllowedPattern: `^$|^${BUCKET}$`,
    ConstraintDescription: 'empty, or a bucket name (3 to 63 of a-z 0-9 . -)',
  },
  ExtractDestinationPrefix: {
    Type: 'String',
    Default: 'extracted/',
    Description:
      "An archive <ExtractArchivePrefix><name>.zip is extracted to <ExtractDestinationPrefix><name>/ (ending in '/'; in the same bucket it must not overlap ExtractArchivePrefix)",
    AllowedPattern: '^[^/].*/$',
    ConstraintDescription: "a key prefix ending in '/' that does not start with one",
  },
};

/** The source bucket list padded with empty names, so that Fn::Select of any slot succeeds. */
const PADDED_SOURCE_BUCKETS = { 'Fn::Split': [',', { 'Fn::Sub': '${SourceBuckets}' + ','.repeat(MAX_SOURCE_BUCKETS - 1) }] };

function sourceBucketSlot(i: number): TemplateJson {
  return { 'Fn::Select': [i, PADDED_SOURCE_BUCKETS] };
}

/** Condition names. */
export const CONDITIONS = {
  kmsKey: 'HasKmsKey',
  monitoring: 'Monitoring',
  extract: 'Extract',
  extractMonitoring: 'ExtractMonitoring',
  extractToArchiveBucket: 'ExtractToArchiveBucket',
  sourceBucket: (slot: number) => `HasSourceBucket${slot}`,
};

/** The template's Conditions. */
export function conditions(): TemplateJson {
  const out: TemplateJson = {
    [CONDITIONS.kmsKey]: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'KmsKeyArn' }, ''] }] },
    [CONDITIONS.monitoring]: { 'Fn::Equals': [{ Ref: 'Monitoring' }, 'true'] },
    [CONDITIONS.extract]: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'ExtractBucket' }, ''] }] },
    [CONDITIONS.extractMonitoring]: { 'Fn::And': [{ Condition: CONDITIONS.extract }, { Condition: CONDITIONS.monitoring }] },
    [CONDITIONS.extractToArchiveBucket]: { 'Fn::Equals': [{ Ref: 'ExtractDestinationBucket' }, ''] },
  };
  for (let slot = 2; slot <= MAX_SOURCE_BUCKETS; slot++) {
    out[CONDITIONS.sourceBucket(slot)] = { 'Fn::Not': [{ 'Fn::Equals': [sourceBucketSlot(slot - 1), ''] }] };
  }
  return out;
}

/** A placeholder and what stands for it in an Fn::Sub string: a parameter, or a variable bound to an expression. */
interface Substitution {
  readonly placeholder: string;
  readonly name: string;
  /** The variable's value; undefined: `name` is a parameter. */
  readonly value?: TemplateJson;
}

const SUBSTITUTIONS: Substitution[] = [
  ...PLACEHOLDERS.sourceBuckets.map((placeholder, i) => ({ placeholder, name: `SourceBucket${i + 1}`, value: sourceBucketSlot(i) })),
  { placeholder: PLACEHOLDERS.sourcePrefix, name: 'SourcePrefix' },
  { placeholder: PLACEHOLDERS.destinationBucket, name: 'DestinationBucket' },
  { placeholder: PLACEHOLDERS.destinationPrefix, name: 'DestinationPrefix' },
  { placeholder: PLACEHOLDERS.kmsKeyArn, name: 'KmsKeyArn' },
  { placeholder: PLACEHOLDERS.extractBucket, name: 'ExtractBucket' },
  { placeholder: PLACEHOLDERS.extractArchivePrefix, name: 'ExtractArchivePrefix' },
  {
    placeholder: PLACEHOLDERS.extractDestinationBucket,
    name: 'ExtractDestinationBucketName',
    value: { 'Fn::If': [CONDITIONS.extractToArchiveBucket, { Ref: 'ExtractBucket' }, { Ref: 'ExtractDestinationBucket' }] },
  },
  { placeholder: PLACEHOLDERS.extractDestinationPrefix, name: 'ExtractDestinationPrefix' },
].sort((a, b) => b.placeholder.length - a.placeholder.length); // the longest first, so none matches inside another

const PLACEHOLDER_RE = new RegExp(SUBSTITUTIONS.map((s) => s.placeholder.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'g');

/** Where the synthesized template's assets go: function logical ID → directory, state machine logical ID → file (paths relative to the template). */
export interface LocalAssets {
  readonly functions: Record<string, string>;
  readonly definitions: Record<string, string>;
}

/** Which resources and outputs exist only under a condition: logical ID → condition name. */
export type ResourceConditions = Record<string, string>;

const NO_VALUE = { Ref: 'AWS::NoValue' };

/**
 * The standalone template: `synthesized` (the stack synthesized with PLACEHOLDERS) with Parameters
 * and Conditions, each placeholder replaced, assets pointing at local paths and nothing of CDK's
 * bootstrap left. Throws when a placeholder or a bootstrap reference would remain.
 */
export function standaloneTemplate(synthesized: TemplateJson, assets: LocalAssets, resourceConditions: ResourceConditions, description: string): TemplateJson {
  const t = structuredClone(synthesized) as TemplateJson;
  delete t.Parameters?.BootstrapVersion;
  delete t.Rules?.CheckBootstrapVersion;
  for (const section of ['Parameters', 'Rules']) if (t[section] && Object.keys(t[section]).length === 0) delete t[section];
  const resources: TemplateJson = t.Resources;
  for (const [id, r] of Object.entries<TemplateJson>(resources)) {
    delete r.Metadata; // construct paths and cdk-nag's suppressions, which name the placeholders
    if (r.Type === 'AWS::CDK::Metadata') delete resources[id];
  }
  for (const [id, dir] of Object.entries(assets.functions)) setAsset(resources, id, 'Code', dir);
  for (const [id, file] of Object.entries(assets.definitions)) setAsset(resources, id, 'DefinitionS3Location', file);
  for (const [id, condition] of Object.entries(resourceConditions)) {
    const r = resources[id] ?? t.Outputs?.[id];
    if (!r) throw new Error(`standalone template: no resource or output ${id} to put under condition ${condition}`);
    r.Condition = condition;
  }
  for (const r of Object.values<TemplateJson>(resources)) {
    const env = r.Properties?.Environment?.Variables;
    if (env?.ALLOWED_SOURCE_BUCKETS !== undefined) {
      if (env.ALLOWED_SOURCE_BUCKETS !== PLACEHOLDERS.sourceBuckets.join(',')) {
        throw new Error(`standalone template: ALLOWED_SOURCE_BUCKETS is ${JSON.stringify(env.ALLOWED_SOURCE_BUCKETS)}, not the placeholders joined`);
      }
      env.ALLOWED_SOURCE_BUCKETS = { Ref: 'SourceBuckets' };
    }
    if (r.Type === 'AWS::S3::Bucket' && mentions(r.Properties?.BucketEncryption, PLACEHOLDERS.kmsKeyArn)) {
      r.Properties.BucketEncryption = {
        'Fn::If': [CONDITIONS.kmsKey, r.Properties.BucketEncryption, { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] }],
      };
    }
  }
  conditionPolicies(resources);
  t.Resources = substitute(resources);
  t.Outputs = substitute(t.Outputs ?? {});
  const out: TemplateJson = {
    AWSTemplateFormatVersion: '2010-09-09',
    Description: description,
    Parameters: PARAMETERS,
    Conditions: conditions(),
    ...t,
  };
  delete out.Rules;
  const leftovers = [...SUBSTITUTIONS.map((s) => s.placeholder), 'cdk-hnb659fds', 'BootstrapVersion', 'aws:cdk:'];
  for (const section of ['Resources', 'Outputs']) {
    for (const [id, v] of Object.entries(out[section] ?? {})) {
      const left = leftovers.find((l) => mentions(v, l));
      if (left) throw new Error(`standalone template: ${section} ${id} still holds ${left} (a placeholder or CDK's bootstrap), which a deployment cannot resolve`);
    }
  }
  return out;
}

function setAsset(resources: TemplateJson, id: string, property: string, path: string): void {
  const props = resources[id]?.Properties;
  if (!props?.[property]) throw new Error(`standalone template: resource ${id} has no ${property} to point at ${path}`);
  props[property] = path;
}

/**
 * In every IAM policy: a resource of source bucket slot 2 and up exists only when that slot is
 * named, a statement on the KMS key only when a key is given.
 */
function conditionPolicies(resources: TemplateJson): void {
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (v === null || typeof v !== 'object') return;
    const o = v as TemplateJson;
    if (Array.isArray(o.Statement)) {
      o.Statement = o.Statement.map((s: TemplateJson) => {
        if (Array.isArray(s.Resource)) s.Resource = s.Resource.map(conditionSourceSlot);
        else if (sourceSlotOf(s.Resource) > 1) throw new Error(`standalone template: statement ${s.Sid} names only a source bucket of slot ${sourceSlotOf(s.Resource)}`);
        return mentions(s, PLACEHOLDERS.kmsKeyArn) ? { 'Fn::If': [CONDITIONS.kmsKey, s, NO_VALUE] } : s;
      });
      if (o.Statement.every((s: TemplateJson) => s['Fn::If'] !== undefined)) {
        throw new Error('standalone template: a policy whose every statement is on the KMS key would be empty without one');
      }
      return;
    }
    Object.values(o).forEach(visit);
  };
  visit(resources);
}

function conditionSourceSlot(resource: unknown): unknown {
  const slot = sourceSlotOf(resource);
  return slot > 1 ? { 'Fn::If': [CONDITIONS.sourceBucket(slot), resource, NO_VALUE] } : resource;
}

/** The source bucket slot (1-based) a value names, 0 for none. */
function sourceSlotOf(v: unknown): number {
  const text = JSON.stringify(v) ?? '';
  return PLACEHOLDERS.sourceBuckets.findIndex((p) => text.includes(p)) + 1;
}

function mentions(v: unknown, placeholder: string): boolean {
  return (JSON.stringify(v) ?? '').includes(placeholder);
}

/**
 * Replaces every string holding placeholders: one that is exactly a parameter's placeholder by its
 * Ref, any other by an Fn::Sub (with the variables it needs).
 */
function substitute(v: any): any {
  if (Array.isArray(v)) return v.map(substitute);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, substitute(e)]));
  if (typeof v !== 'string' || !PLACEHOLDER_RE.test(v)) return v;
  PLACEHOLDER_RE.lastIndex = 0;
  const exact = SUBSTITUTIONS.find((s) => s.placeholder === v);
  if (exact && exact.value === undefined) return { Ref: exact.name };
  if (exact) return exact.value;
  const vars: TemplateJson = {};
  const text = v.replace(/\$\{/g, '${!').replace(PLACEHOLDER_RE, (p) => {
    const s = SUBSTITUTIONS.find((x) => x.placeholder === p)!;
    if (s.value !== undefined) vars[s.name] = s.value;
    return '${' + s.name + '}';
  });
  PLACEHOLDER_RE.lastIndex = 0;
  return Object.keys(vars).length === 0 ? { 'Fn::Sub': text } : { 'Fn::Sub': [text, vars] };
}
