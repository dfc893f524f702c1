/** Values shaped like what CloudFormation substitutes into the ASL at deploy time. */
export const REALISTIC_SUBSTITUTIONS = {
  PlannerFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:S3ZipStack-Planner-AbC123',
  ReaderFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:S3ZipStack-Reader-AbC123',
  WorkerFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:S3ZipStack-Worker-AbC123',
  FinalizerFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:S3ZipStack-Finalizer-AbC123',
  AbortFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:S3ZipStack-Abort-AbC123',
  MapExecutionType: 'STANDARD',
};
