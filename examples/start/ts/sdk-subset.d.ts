/**
 * The part of the AWS SDK for JavaScript v3 that start.ts calls, declared with the SDK's own names and shapes
 * (@aws-sdk/client-sfn and @aws-sdk/client-s3: their StartExecutionCommandInput and PutObjectCommandInput, fields
 * trimmed to those used), so the repository's tsc checks start.ts without the SDK installed. With the SDK
 * installed, delete this file: start.ts compiles against the SDK itself.
 */
declare module '@aws-sdk/client-sfn' {
  export interface SFNClientConfig {
    region?: string;
  }
  export interface StartExecutionCommandInput {
    stateMachineArn: string | undefined;
    name?: string;
    input?: string;
    traceHeader?: string;
  }
  export interface StartExecutionCommandOutput {
    executionArn: string | undefined;
    startDate: Date | undefined;
  }
  export class StartExecutionCommand {
    constructor(input: StartExecutionCommandInput);
    readonly input: StartExecutionCommandInput;
  }
  export class SFNClient {
    constructor(config: SFNClientConfig);
    send(command: StartExecutionCommand): Promise<StartExecutionCommandOutput>;
  }
}

declare module '@aws-sdk/client-s3' {
  export interface S3ClientConfig {
    region?: string;
  }
  export interface PutObjectCommandInput {
    Bucket: string | undefined;
    Key: string | undefined;
    Body?: string | Uint8Array;
    ContentType?: string;
  }
  export interface PutObjectCommandOutput {
    ETag?: string;
  }
  export class PutObjectCommand {
    constructor(input: PutObjectCommandInput);
    readonly input: PutObjectCommandInput;
  }
  export class S3Client {
    constructor(config: S3ClientConfig);
    send(command: PutObjectCommand): Promise<PutObjectCommandOutput>;
  }
}
