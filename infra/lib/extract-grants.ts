/**
 * What each of the extract workflow's functions may do: explicit statements, no wildcard actions,
 * each on the one bucket prefix it works in (tests/deployed checks every call against them and
 * lists any grant no call used).
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { grant, kmsUse, s3Arn, workPrefixList } from './map-workflow';

/** The extract workflow's functions, by the directory name of their bootstrap binary. */
export const EXTRACT_FUNCTION_NAMES = ['extract-planner', 'extract-worker', 'extract-finalizer', 'extract-abort'] as const;
export type ExtractFunctionName = (typeof EXTRACT_FUNCTION_NAMES)[number];

/** Where the functions work and with which keys. */
export interface ExtractAccess {
  readonly functions: Record<ExtractFunctionName, lambda.Function>;
  /** The work bucket; its customer-managed key, when it has one, is granted where work objects are read or written. */
  readonly workBucket: s3.IBucket;
  /** The extract workflow's own prefix in the work bucket (<workPrefix>extract/). */
  readonly extractWorkPrefix: string;
  readonly archiveBucket: string;
  readonly archivePrefix: string;
  readonly destinationBucket: string;
  readonly destinationPrefix: string;
  readonly archiveKmsKeyArns?: string[];
  readonly destinationKmsKeyArn?: string;
}

/** Adds every function's S3 and KMS statements, S3 first. */
export function grantExtractFunctions(a: ExtractAccess): void {
  grantS3(a);
  grantKms(a);
}

/** The statements on work, archive and destination objects. */
function grantS3(a: ExtractAccess): void {
  const workObjects = a.workBucket.arnForObjects(`${a.extractWorkPrefix}*`);
  const work = (actions: string[]) => new iam.PolicyStatement({ sid: 'WorkPrefixObjects', actions, resources: [workObjects] });
  const workList = workPrefixList(a.workBucket.bucketArn, `${a.extractWorkPrefix}*`);
  // GetObject on the archive also covers UploadPartCopy's read of it.
  const archiveRead = new iam.PolicyStatement({ sid: 'ArchiveRead', actions: ['s3:GetObject'], resources: [s3Arn(a.archiveBucket, `/${a.archivePrefix}*`)] });
  const destination = destinationStatements(a);
  const { 'extract-planner': planner, 'extract-worker': worker, 'extract-finalizer': finalizer, 'extract-abort': abort } = a.functions;
  // planner: the archive's end records and directory; existing objects; the jobs.
  grant(planner, [archiveRead, destination.prefixList, work(['s3:PutObject']), workList]);
  // worker: reads and copies of the archive; writes (PutObject covers create/part/copy/complete),
  // HEAD of an object a retried batch wrote before, abort of its own open uploads.
  grant(worker, [archiveRead, destination.objects(['s3:PutObject', 's3:GetObject', 's3:AbortMultipartUpload'])]);
  // finalizer: the jobs and Map results; the report; uploads left by retried batches; cleanup.
  grant(finalizer, [work(['s3:GetObject', 's3:DeleteObject']), workList, destination.objects(['s3:PutObject', 's3:GetObject', 's3:AbortMultipartUpload']), destination.uploadsList]);
  // abort: this execution's uploads and objects (HEAD for the execution metadata, delete If-Match).
  grant(abort, [
    work(['s3:GetObject', 's3:DeleteObject']),
    workList,
    destination.objects(['s3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload']),
    destination.prefixList,
    destination.uploadsList,
  ]);
}

/** The statements on the destination prefix: its objects, its listing and its uploads. */
function destinationStatements(a: ExtractAccess) {
  const objects = s3Arn(a.destinationBucket, `/${a.destinationPrefix}*`);
  return {
    objects: (actions: string[]) => new iam.PolicyStatement({ sid: 'DestinationObjects', actions, resources: [objects] }),
    prefixList: new iam.PolicyStatement({
      sid: 'DestinationPrefixList',
      actions: ['s3:ListBucket'],
      resources: [s3Arn(a.destinationBucket)],
      conditions: { StringLike: { 's3:prefix': [`${a.destinationPrefix}*`] } },
    }),
    // ListMultipartUploads takes no s3:prefix condition; the handlers list only the destination prefix.
    uploadsList: new iam.PolicyStatement({ sid: 'DestinationUploadsList', actions: ['s3:ListBucketMultipartUploads'], resources: [s3Arn(a.destinationBucket)] }),
  };
}

/**
 * KMS only where a key is configured, and only on that key: S3 asks KMS for a data key to
 * write an object or start an upload (GenerateDataKey) and to decrypt one it reads, copies
 * from, adds a part to or completes (Decrypt).
 */
function grantKms(a: ExtractAccess): void {
  const { 'extract-planner': planner, 'extract-worker': worker, 'extract-finalizer': finalizer, 'extract-abort': abort } = a.functions;
  const workKey = a.workBucket.encryptionKey?.keyArn;
  if (workKey) {
    planner.addToRolePolicy(kmsUse('WorkKey', ['kms:GenerateDataKey'], [workKey]));
    for (const fn of [finalizer, abort]) fn.addToRolePolicy(kmsUse('WorkKey', ['kms:Decrypt'], [workKey]));
  }
  if (a.archiveKmsKeyArns && a.archiveKmsKeyArns.length > 0) {
    const s = kmsUse('ArchiveKeysDecrypt', ['kms:Decrypt'], a.archiveKmsKeyArns);
    for (const fn of [planner, worker]) fn.addToRolePolicy(s);
  }
  if (a.destinationKmsKeyArn) {
    // worker: creates, puts and completes objects; finalizer: puts the report.
    worker.addToRolePolicy(kmsUse('DestinationKey', ['kms:Decrypt', 'kms:GenerateDataKey'], [a.destinationKmsKeyArn]));
    finalizer.addToRolePolicy(kmsUse('DestinationKey', ['kms:GenerateDataKey'], [a.destinationKmsKeyArn]));
  }
}
