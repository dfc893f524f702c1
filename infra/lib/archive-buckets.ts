import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';

/** The buckets the create workflow makes for itself. */
export interface ArchiveBuckets {
  /** Plans, jobs, pieces, chain rounds and Map results, under the work prefix. */
  readonly work: s3.Bucket;
  /** Request objects (requests/ starts a run) and the manifests they point to. */
  readonly control: s3.Bucket;
  /** Server access logs of the other two. */
  readonly accessLogs: s3.Bucket;
}

export interface ArchiveBucketsProps {
  readonly workPrefix: string;
  readonly workExpirationDays: number;
  /** A run kept for Redrive keeps its work this long: the work bucket's rules remove it a day after. */
  readonly keepFailedRunsDays: number;
  readonly encryptionKey?: kms.IKey;
  readonly removalPolicy: RemovalPolicy;
}

/** Private, TLS-only, owner-enforced buckets whose incomplete uploads are aborted after a day. */
function privateBucket(scope: Construct, id: string, props: s3.BucketProps): s3.Bucket {
  return new s3.Bucket(scope, id, {
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
    ...props,
  });
}

const ABORT_INCOMPLETE_UPLOADS: s3.LifecycleRule = { id: 'AbortIncompleteMultipartUploads', abortIncompleteMultipartUploadAfter: Duration.days(1) };

/**
 * The work bucket's rules: work objects expire, and incomplete uploads (chain rounds, CRC
 * probes) are aborted, after workExpirationDays, and never before a run kept for Redrive
 * (keepFailedRunsDays) has had its time: what nobody redrives is removed a day after.
 */
export function workLifecycleRules(p: Pick<ArchiveBucketsProps, 'workPrefix' | 'workExpirationDays' | 'keepFailedRunsDays'>): s3.LifecycleRule[] {
  const days = Math.max(p.workExpirationDays, p.keepFailedRunsDays + 1);
  return [
    { id: 'ExpireWorkObjects', prefix: p.workPrefix, expiration: Duration.days(days) },
    { id: 'AbortIncompleteMultipartUploads', abortIncompleteMultipartUploadAfter: Duration.days(p.keepFailedRunsDays + 1) },
  ];
}

/** The work, control and access-log buckets (construct IDs WorkBucket, ControlBucket, AccessLogsBucket under `scope`). */
export function createArchiveBuckets(scope: Construct, p: ArchiveBucketsProps): ArchiveBuckets {
  const encryption = p.encryptionKey
    ? { encryption: s3.BucketEncryption.KMS, encryptionKey: p.encryptionKey, bucketKeyEnabled: true }
    : { encryption: s3.BucketEncryption.S3_MANAGED };

  // Server access logs must go to an SSE-S3 bucket, so this one never uses the KMS key.
  // Object ownership is left to CDK: with the feature flag
  // @aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy (set in cdk.json) delivery is granted by a
  // bucket policy, without it by the LogDeliveryWrite ACL, which needs ObjectWriter.
  const accessLogs = new s3.Bucket(scope, 'AccessLogsBucket', {
    encryption: s3.BucketEncryption.S3_MANAGED,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    removalPolicy: p.removalPolicy,
    lifecycleRules: [{ id: 'ExpireAccessLogs', expiration: Duration.days(90) }],
  });
  const work = privateBucket(scope, 'WorkBucket', {
    ...encryption,
    removalPolicy: p.removalPolicy,
    serverAccessLogsBucket: accessLogs,
    serverAccessLogsPrefix: 'work/',
    lifecycleRules: workLifecycleRules(p),
  });
  const control = privateBucket(scope, 'ControlBucket', {
    ...encryption,
    removalPolicy: p.removalPolicy,
    serverAccessLogsBucket: accessLogs,
    serverAccessLogsPrefix: 'control/',
    lifecycleRules: [ABORT_INCOMPLETE_UPLOADS],
  });
  // Set EventBridge delivery on the CloudFormation bucket itself rather than through
  // `eventBridgeEnabled`, which adds a custom-resource Lambda with a '*' s3 policy.
  (control.node.defaultChild as s3.CfnBucket).notificationConfiguration = {
    eventBridgeConfiguration: { eventBridgeEnabled: true },
  };
  return { work, control, accessLogs };
}
