/**
 * s3zip-cdk: the s3zip workflows as CDK constructs.
 *
 *   import { ArchiveWorkflow, ExtractWorkflow } from 's3zip-cdk';
 *
 * ArchiveWorkflow turns many S3 objects into one ZIP in S3; ExtractWorkflow unpacks a ZIP in S3
 * into objects. Each is a Step Functions state machine with a Distributed Map over Go Lambdas, whose
 * binaries (linux/arm64) ship inside this package: neither Go nor Docker is needed to synthesize.
 */
export { ArchiveWorkflow, type ArchiveWorkflowProps, addArchiveWorkflowOutputs, ENDED_STATUSES, REQUESTS_PREFIX } from './archive-workflow';
export { FUNCTION_NAMES, type FunctionName } from './archive-grants';
export { ExtractWorkflow, type ExtractWorkflowProps, addExtractWorkflowOutputs } from './extract-workflow';
export { EXTRACT_FUNCTION_NAMES, type ExtractFunctionName } from './extract-grants';
export type { FunctionSizing, MapWorkflowProps } from './map-workflow';
export { type LoggedMetric, type MonitoredWorkflow, type MonitoringChart, type MonitoringProps, WorkflowMonitoring } from './monitoring';
