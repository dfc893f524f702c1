/**
 * Start an s3zip archive from a TypeScript application (AWS SDK for JavaScript v3): by StartExecution, or by a
 * request dropped under requests/ in the control bucket; archiveEnded, the completion rule's Lambda target, reads
 * the execution's output (docs/output.md). Names come from the environment: the stack's outputs StateMachineArn
 * and ControlBucketName, and your buckets.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';

/** What this program reads of the execution's output, version 1. */
export interface Output {
  version: number;
  requestId: string;
  archive: { uri: string; size: number; etag: string; crc32: string };
  report: string;
  entries: number;
}

/** A "Step Functions Execution Status Change" event, as far as this program reads it. */
export interface StatusChange {
  detail: { name: string; status: string; output?: string; error?: string; cause?: string };
}

/** The execution's input (docs/contract.md, "Request"). */
export function newRequest(id: string, sourceBucket: string, destinationBucket: string): string {
  return JSON.stringify({
    id,
    source: { bucket: sourceBucket, prefix: '2024/' },
    destination: { bucket: destinationBucket, key: 'zips/photos-2024.zip' },
    options: { strategy: 'auto' },
  });
}

export async function start(request: string): Promise<void> {
  const env = (name: string): string => process.env[name] ?? '';
  if (env('CONTROL_BUCKET') !== '') {
    // the control-bucket drop
    await new S3Client({}).send(new PutObjectCommand({ Bucket: env('CONTROL_BUCKET'), Key: 'requests/order-42.json', Body: request }));
  } else {
    const run = await new SFNClient({}).send(new StartExecutionCommand({ stateMachineArn: env('STATE_MACHINE_ARN'), input: request }));
    console.log(run.executionArn);
  }
}

/** The completion rule's Lambda target. */
export async function archiveEnded(event: StatusChange): Promise<void> {
  const { detail } = event;
  if (detail.status !== 'SUCCEEDED') {
    console.log(`${detail.name} ${detail.status}: ${detail.error}: ${detail.cause}`);
    return;
  }
  const out = JSON.parse(detail.output ?? '') as Output; // docs/output.md
  if (out.version !== 1) throw new Error(`output version ${out.version}: this code reads version 1`);
  console.log(`${out.requestId}: ${out.archive.uri}, ${out.archive.size} bytes, CRC-32 ${out.archive.crc32}`);
}

if (require.main === module) {
  start(newRequest('order-42', process.env.SOURCE_BUCKET ?? '', process.env.DESTINATION_BUCKET ?? '')).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
