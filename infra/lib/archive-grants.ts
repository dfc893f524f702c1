/**
 * What each of the create workflow's functions may do: explicit statements, no wildcard actions,
 * each on the one bucket prefix it works in (tests/deployed checks every call against them and
 * lists any grant no call used).
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { grant, isBucketName, kmsUse, s3Arn, workPrefixList } from './map-workflow';

/** The five Go Lambda functions, by the directory name of their bootstrap binary. */
export const FUNCTION_NAMES = ['planner', 'reader', 'worker', 'finalizer', 'abort'] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

/** Where the functions work and with which keys. */
export interface ArchiveAccess {
  readonly functions: Record<FunctionName, lambda.Function>;
  readonly workBucket: s3.IBucket;
  readonly controlBucket: s3.IBucket;
  readonly workPrefix: string;
  readonly sourceBuckets: string[];
  readonly sourcePrefix: string;
  readonly destinationBucket: string;
  readonly destinationPrefix: string;
  /** Object ARNs of the inventory reports the planner may read. */
  readonly inventoryArns: string[];
  readonly encryptionKey?: kms.IKey;
  readonly sourceKmsKeyArns?: string[];
  readonly destinationKmsKeyArn?: string;
}

/** The object ARNs of inventoryBuckets' "bucket" or "bucket/prefix" entries (partition: as cdk-nag names it, for its findings). */
export function inventoryObjectArns(locations: string[] = [], partition?: string): string[] {
  return locations.map((l) => {
    const slash = l.indexOf('/');
    const bucket = slash < 0 ? l : l.slice(0, slash);
    const prefix = slash < 0 ? '' : l.slice(slash + 1).replace(/^\/+/, '');
    if (!isBucketName(bucket) || prefix.includes('*')) {
      throw new Error(`ArchiveWorkflow: inventoryBuckets entry "${l}" is not "bucket" or "bucket/prefix" (a bucket name, then an optional key prefix without '*')`);
    }
    return partition === undefined ? s3Arn(bucket, `/${prefix}*`) : `arn:${partition}:s3:::${bucket}/${prefix}*`;
  });
}

/** Adds every function's S3 and KMS statements, in the order the template has always listed them. */
export function grantArchiveFunctions(a: ArchiveAccess): void {
  grantS3(a);
  grantKms(a);
}

/**
 * Work objects, per function (tests/deployed lists every grant no call uses): the planner writes
 * (plan files, the pad, read jobs, an entry's compressed pieces joined) and deletes (pieces once
 * joined, or of an entry left STORED); the reader writes compressed pieces and, to learn the CRC-32
 * of a source that stores none without reading it, copies it into a probe upload that it aborts;
 * workers write chain rounds and delete each one once the next round has copied it (a chain holds
 * a few rounds at a time, not all of them; found by tests/deployed); the finalizer also records each
 * archive of a split run it completes (which Abort deletes if the run fails after all); the
 * finalizer and abort read and delete; all abort uploads under the prefix (chain rounds left open).
 */
const WORK_OBJECT_ACTIONS: Record<FunctionName, string[]> = {
  planner: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
  reader: ['s3:PutObject', 's3:AbortMultipartUpload'],
  worker: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
  finalizer: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
  abort: ['s3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
};

/** The statements on work, source, destination, control and inventory objects. */
function grantS3(a: ArchiveAccess): void {
  const workObjectsFor = (name: FunctionName) =>
    new iam.PolicyStatement({ sid: 'WorkPrefixObjects', actions: WORK_OBJECT_ACTIONS[name], resources: [`${a.workBucket.bucketArn}/${a.workPrefix}*`] });
  const workAccess = [workPrefixList(a.workBucket.bucketArn, `${a.workPrefix}*`)];
  // Cleaning the work prefix also aborts chain-round uploads left in the work bucket, which
  // needs the bucket's list of uploads (this action takes no s3:prefix condition).
  // Found by tests/deployed: without it every finalizer and abort failed with AccessDenied.
  const workUploadsList = new iam.PolicyStatement({ sid: 'WorkUploadsList', actions: ['s3:ListBucketMultipartUploads'], resources: [a.workBucket.bucketArn] });
  const source = sourceStatements(a);
  const destination = destinationStatements(a);
  const controlRead = new iam.PolicyStatement({
    sid: 'ControlObjectsRead',
    // Request objects (requests/) and manifests the requests point to.
    actions: ['s3:GetObject'],
    resources: [a.controlBucket.arnForObjects('*')],
  });
  // Inventory reports: read by the planner only, and only where the deployment says they are.
  const inventoryRead = a.inventoryArns.length === 0 ? [] : [new iam.PolicyStatement({ sid: 'InventoryReportsRead', actions: ['s3:GetObject'], resources: a.inventoryArns })];
  const { planner, reader, worker, finalizer, abort } = a.functions;
  // The planner lists the destination's uploads to abort one whose create answer was lost. Of
  // the sources it only lists: a manifest's objects, their CRC-32s and metadata are looked up by
  // the reader (tests/deployed found its s3:GetObject and kms:Decrypt on them unused).
  grant(planner, [
    workObjectsFor('planner'),
    ...workAccess,
    source.list,
    destination.objects(['s3:PutObject', 's3:PutObjectTagging', 's3:AbortMultipartUpload', 's3:GetObject']),
    destination.prefixList,
    destination.uploadsList,
    controlRead,
    ...inventoryRead,
  ]);
  // The reader reads sources by range (If-Match on the planned ETag) and writes pieces under the
  // work prefix, and looks sources up (HEAD = s3:GetObject; a copy into its probe upload): no
  // destination, no delete. It may list the sources, as the worker may, so that a source deleted
  // since planning answers 404 (SourceChangedError), not 403.
  grant(reader, [workObjectsFor('reader'), source.read, source.list]);
  grant(worker, [workObjectsFor('worker'), ...workAccess, source.read, source.list, destination.objects(['s3:PutObject'])]);
  grant(finalizer, [
    workObjectsFor('finalizer'),
    ...workAccess,
    workUploadsList,
    source.tailRead,
    destination.objects(['s3:PutObject', 's3:GetObject', 's3:DeleteObject']),
    destination.prefixList,
  ]);
  // Abort aborts the job's upload by its id; it never lists the destination's uploads. A split
  // run's archives the finalizer completed before the run failed are deleted (HEAD to find each
  // still the one this run made, by its ETag; then DeleteObject): a failed run leaves none.
  grant(abort, [workObjectsFor('abort'), ...workAccess, workUploadsList, destination.uploadsAbort, destination.discard]);
}

function sourceStatements(a: ArchiveAccess) {
  const objects = a.sourceBuckets.map((b) => s3Arn(b, `/${a.sourcePrefix}*`));
  return {
    // GetObjectVersion: sources of a versioned bucket are read by the version the planner pinned.
    read: new iam.PolicyStatement({ sid: 'SourceObjectsRead', actions: ['s3:GetObject', 's3:GetObjectVersion'], resources: objects }),
    list: new iam.PolicyStatement({
      sid: 'SourceBucketsList',
      actions: ['s3:ListBucket'],
      resources: a.sourceBuckets.map((b) => s3Arn(b)),
      ...(a.sourcePrefix !== '' ? { conditions: { StringLike: { 's3:prefix': [`${a.sourcePrefix}*`] } } } : {}),
    }),
    // The final part may carry the archive's tail (small objects after the last copied one),
    // which the finalizer reads from the sources: read-only, objects only, no listing.
    tailRead: new iam.PolicyStatement({ sid: 'SourceObjectsReadTail', actions: ['s3:GetObject', 's3:GetObjectVersion'], resources: objects }),
  };
}

/**
 * PutObject covers Create/UploadPart/UploadPartCopy/CompleteMultipartUpload. Each function
 * gets what it calls (measured by tests/deployed):
 *   planner   HEAD (GetObject) for the overwrite check, create with tags (PutObjectTagging),
 *             abort an upload whose create answer was lost;
 *   worker    UploadPart / UploadPartCopy only;
 *   finalizer last part + complete, HEAD to verify, DeleteObject of an archive this run
 *             completed that fails the check (no wrong bytes are left behind); the same
 *             s3:GetObject is what its download links (maxPresignSeconds) read with.
 */
function destinationStatements(a: ArchiveAccess) {
  const objects = s3Arn(a.destinationBucket, `/${a.destinationPrefix}*`);
  return {
    objects: (actions: string[]) => new iam.PolicyStatement({ sid: 'DestinationObjectsWrite', actions, resources: [objects] }),
    prefixList: new iam.PolicyStatement({
      sid: 'DestinationPrefixList',
      // Lets the planner tell "absent" from "forbidden" for the overwrite=false check.
      actions: ['s3:ListBucket'],
      resources: [s3Arn(a.destinationBucket)],
      ...(a.destinationPrefix !== '' ? { conditions: { StringLike: { 's3:prefix': [`${a.destinationPrefix}*`] } } } : {}),
    }),
    uploadsAbort: new iam.PolicyStatement({ sid: 'DestinationUploadsAbort', actions: ['s3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], resources: [objects] }),
    uploadsList: new iam.PolicyStatement({ sid: 'DestinationUploadsList', actions: ['s3:ListBucketMultipartUploads'], resources: [s3Arn(a.destinationBucket)] }),
    discard: new iam.PolicyStatement({ sid: 'DestinationArchivesDiscard', actions: ['s3:GetObject', 's3:DeleteObject'], resources: [objects] }),
  };
}

const DECRYPT = 'kms:Decrypt';
const DATA_KEY = 'kms:GenerateDataKey';

/**
 * KMS only where a key is configured, only on that key, and only what each function's S3 calls
 * make S3 ask KMS for (tests/deployed checks every call and lists any grant none used): a data
 * key to write an object or start an upload (GenerateDataKey), a decrypt to read one, copy from
 * it, add a part to or complete it (Decrypt). S3 never calls kms:Encrypt for SSE-KMS.
 */
function grantKms(a: ArchiveAccess): void {
  const { planner, reader, worker, finalizer } = a.functions;
  if (a.encryptionKey) {
    // The reader writes pieces and adds copies to its probe upload; the finalizer and abort only
    // read and delete.
    const workKeyUse: Record<FunctionName, string[]> = {
      planner: [DECRYPT, DATA_KEY],
      reader: [DECRYPT, DATA_KEY],
      worker: [DECRYPT, DATA_KEY],
      finalizer: [DECRYPT, DATA_KEY], // records each archive of a split run it completes (done/)
      abort: [DECRYPT],
    };
    for (const name of FUNCTION_NAMES) a.functions[name].addToRolePolicy(kmsUse('WorkAndControlKey', workKeyUse[name], [a.encryptionKey.keyArn]));
  }
  if (a.sourceKmsKeyArns && a.sourceKmsKeyArns.length > 0) {
    const s = kmsUse('SourceKeysDecrypt', [DECRYPT], a.sourceKmsKeyArns);
    for (const fn of [reader, worker, finalizer]) fn.addToRolePolicy(s);
  }
  if (a.destinationKmsKeyArn) {
    // planner: creates the upload; worker: adds parts; finalizer: the last part, the
    // completion and the report.
    const key = [a.destinationKmsKeyArn];
    planner.addToRolePolicy(kmsUse('DestinationKey', [DATA_KEY], key));
    worker.addToRolePolicy(kmsUse('DestinationKey', [DECRYPT], key));
    finalizer.addToRolePolicy(kmsUse('DestinationKey', [DECRYPT, DATA_KEY], key));
  }
}
