/**
 * Operating a workflow (the `monitoring` prop): alarms on runs that fail or time out and on throttled
 * function invocations, and a dashboard of runs, parts and bytes. Every metric charted is one that
 * is written: Step Functions' and Lambda's own, and metric filters on lines the Go functions log
 * (JSON, one object a line: `{"msg":"planned","parts":…,"streamedBytes":…,"copiedBytes":…}`);
 * tests/deployed/package_test.go checks each filter against what the functions really logged.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

/** Alarms and a dashboard; set `monitoring: {}` for them with their defaults. */
export interface MonitoringProps {
  /** What each alarm does when it fires and when it is OK again (e.g. `new cw_actions.SnsAction(topic)`). @default none: the alarms show in the console only */
  readonly alarmActions?: cloudwatch.IAlarmAction[];
  /** The period each alarm counts over; it fires on one event in a period. @default Duration.minutes(5) */
  readonly alarmPeriod?: Duration;
  /** The dashboard's name. @default CloudFormation names it */
  readonly dashboardName?: string;
}

/** A number a function logs, as a metric: the log line it is on (its msg) and the field. */
export interface LoggedMetric {
  /** Metric name in the workflow's namespace. */
  readonly name: string;
  /** The function whose log group holds the line. */
  readonly function: lambda.Function;
  /** The line's "msg". */
  readonly msg: string;
  /** The JSON field whose value is counted. */
  readonly field: string;
}

/** What a workflow's monitoring watches. */
export interface MonitoredWorkflow {
  readonly stateMachine: sfn.StateMachine;
  readonly functions: lambda.Function[];
  /** Namespace of its log-derived metrics (one per state machine, so two deployments never mix). */
  readonly namespace: string;
  readonly loggedMetrics: LoggedMetric[];
  /** Dashboard rows of log-derived metrics: a title and the metric names charted together. */
  readonly charts: { title: string; metrics: string[] }[];
}

/** Alarms, metric filters and a dashboard for one workflow (construct ID 'Monitoring' under its construct). */
export class WorkflowMonitoring extends Construct {
  readonly failedAlarm: cloudwatch.Alarm;
  readonly timedOutAlarm: cloudwatch.Alarm;
  readonly throttledAlarm: cloudwatch.Alarm;
  readonly dashboard: cloudwatch.Dashboard;
  /** The log-derived metrics, by name. */
  readonly metrics: Record<string, cloudwatch.Metric>;

  constructor(scope: Construct, id: string, workflow: MonitoredWorkflow, props: MonitoringProps) {
    super(scope, id);
    const period = props.alarmPeriod ?? Duration.minutes(5);
    const sm = workflow.stateMachine;
    this.failedAlarm = this.alarm('ExecutionsFailed', sm.metricFailed({ period }), 'a run of the state machine failed (its abort cleaned up; see the execution\'s error and cause)');
    this.timedOutAlarm = this.alarm('ExecutionsTimedOut', sm.metricTimedOut({ period }), 'a run of the state machine timed out');
    this.throttledAlarm = this.alarm('FunctionsThrottled', throttles(workflow.functions, period), "Lambda throttled the workflow's functions (concurrency limit): runs slow down and retry");
    for (const a of [this.failedAlarm, this.timedOutAlarm, this.throttledAlarm]) {
      for (const action of props.alarmActions ?? []) {
        a.addAlarmAction(action);
        a.addOkAction(action);
      }
    }
    this.metrics = Object.fromEntries(workflow.loggedMetrics.map((m) => [m.name, this.metricFilter(workflow.namespace, m)]));
    this.dashboard = this.createDashboard(workflow, props.dashboardName);
  }

  private alarm(id: string, metric: cloudwatch.IMetric, what: string): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      metric,
      alarmDescription: `s3zip: ${what}`,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  private metricFilter(namespace: string, m: LoggedMetric): cloudwatch.Metric {
    const filter = new logs.MetricFilter(this, `${m.name}Filter`, {
      logGroup: m.function.logGroup,
      filterPattern: logs.FilterPattern.stringValue('$.msg', '=', m.msg),
      metricNamespace: namespace,
      metricName: m.name,
      metricValue: `$.${m.field}`,
    });
    return filter.metric({ statistic: cloudwatch.Stats.SUM, period: Duration.minutes(5) });
  }

  private createDashboard(workflow: MonitoredWorkflow, dashboardName?: string): cloudwatch.Dashboard {
    const sm = workflow.stateMachine;
    const period = Duration.minutes(5);
    const runs = new cloudwatch.GraphWidget({
      title: 'Runs',
      left: [sm.metricStarted({ period }), sm.metricSucceeded({ period }), sm.metricFailed({ period }), sm.metricTimedOut({ period }), sm.metricAborted({ period })],
      width: 12,
    });
    const throttled = new cloudwatch.GraphWidget({ title: 'Function invocations throttled', left: [throttles(workflow.functions, period)], width: 12 });
    const charts = workflow.charts.map(
      (c) => new cloudwatch.GraphWidget({ title: c.title, left: c.metrics.map((name) => this.metrics[name]), width: 12 }),
    );
    return new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName, widgets: [[runs, throttled], charts] });
  }
}

/** The sum of the functions' Throttles. */
function throttles(functions: lambda.Function[], period: Duration): cloudwatch.IMetric {
  const usingMetrics = Object.fromEntries(functions.map((fn, i) => [`t${i}`, fn.metricThrottles({ period, statistic: cloudwatch.Stats.SUM })]));
  return new cloudwatch.MathExpression({ expression: `SUM([${Object.keys(usingMetrics).join(', ')}])`, usingMetrics, label: 'Throttles', period });
}
