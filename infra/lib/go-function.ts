import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Duration, RemovalPolicy, Size } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

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
    throw new Error(
      `${p.owner}: ${path.join(assetDir, 'bootstrap')} not found; functionsDir must hold <name>/bootstrap for each function ` +
        '(leave it unset for the binaries shipped in the package; in the s3zip repository build them with `make lambdas`)',
    );
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
