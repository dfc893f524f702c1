/**
 * Operating a workflow (the `monitoring` prop): alarms on runs that fail or time out, on throttled
 * function invocations and on sustained S3 SlowDown answers, and a dashboard of runs, parts, bytes and
 * SlowDowns. Every metric charted is one that is written: Step Functions' and Lambda's own, and metric
 * filters on lines the Go functions log (JSON, one object a line:
 * `{"msg":"planned","parts":…,"streamedBytes":…,"copiedBytes":…}`, `{"msg":"s3 slowdowns","slowDowns":…}`);
 * tests/deployed/package_test.go checks each filter against what the functions really logged (the
 * SlowDown filters only when a run met SlowDowns: they appear only under S3 throttling).
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
  /** The period each alarm counts over; it fires on one event in a period (S3 SlowDowns: in each of 3 periods running). @default Duration.minutes(5) */
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
  readonly charts: MonitoringChart[];
}

/** A dashboard graph of log-derived metrics. */
export interface MonitoringChart {
  readonly title: string;
  /** Names of loggedMetrics charted together. */
  readonly metrics: string[];
}

/** The line every function logs at the end of an invocation whose S3 requests met SlowDown answers (Go: lambdaenv.SlowDownsMessage). */
const SLOW_DOWNS_MSG = 's3 slowdowns';
/** Its field: how many SlowDowns that invocation met (each retried by internal/s3rate). */
const SLOW_DOWNS_FIELD = 'slowDowns';
/** The metric the SlowDown lines of all of a workflow's functions add up to, in its namespace. */
const SLOW_DOWNS_METRIC = 'S3SlowDowns';
/**
 * SlowDown alarm: at least one SlowDown in each of this many periods running. A burst is expected and
 * handled (S3 answers SlowDown while it scales a prefix's partitions, and internal/s3rate retries at the
 * rate S3 allows); SlowDowns in every period for 15 minutes (by default) mean runs are held to S3's rate
 * for good: a prefix too hot, or another writer sharing it.
 */
const SLOW_DOWN_PERIODS = 3;

/** Alarms, metric filters and a dashboard for one workflow (construct ID 'Monitoring' under its construct). */
export class WorkflowMonitoring extends Construct {
  readonly failedAlarm: cloudwatch.Alarm;
  readonly timedOutAlarm: cloudwatch.Alarm;
  readonly throttledAlarm: cloudwatch.Alarm;
  /** Fires when the functions met S3 SlowDowns in each of 3 periods running. */
  readonly slowDownsAlarm: cloudwatch.Alarm;
  readonly dashboard: cloudwatch.Dashboard;
  /** The log-derived metrics, by name (S3SlowDowns among them: the sum over every function). */
  readonly metrics: Record<string, cloudwatch.Metric>;

  constructor(scope: Construct, id: string, workflow: MonitoredWorkflow, props: MonitoringProps) {
    super(scope, id);
    const period = props.alarmPeriod ?? Duration.minutes(5);
    const sm = workflow.stateMachine;
    this.failedAlarm = this.alarm('ExecutionsFailed', sm.metricFailed({ period }), 'a run of the state machine failed (its abort cleaned up; see the execution\'s error and cause)');
    this.timedOutAlarm = this.alarm('ExecutionsTimedOut', sm.metricTimedOut({ period }), 'a run of the state machine timed out');
    this.throttledAlarm = this.alarm('FunctionsThrottled', throttles(workflow.functions, period), "Lambda throttled the workflow's functions (concurrency limit): runs slow down and retry");
    const slowDowns = this.slowDownFilters(workflow, period);
    this.slowDownsAlarm = this.alarm('S3SlowDowns', slowDowns, `S3 answered SlowDown to the functions in ${SLOW_DOWN_PERIODS} periods running: runs are held to the rate S3 allows (a prefix too hot?)`, SLOW_DOWN_PERIODS);
    for (const a of [this.failedAlarm, this.timedOutAlarm, this.throttledAlarm, this.slowDownsAlarm]) {
      for (const action of props.alarmActions ?? []) {
        a.addAlarmAction(action);
        a.addOkAction(action);
      }
    }
    this.metrics = Object.fromEntries(workflow.loggedMetrics.map((m) => [m.name, this.metricFilter(workflow.namespace, m)]));
    this.metrics[SLOW_DOWNS_METRIC] = slowDowns.with({ period: Duration.minutes(5) });
    this.dashboard = this.createDashboard(workflow, props.dashboardName);
  }

  private alarm(id: string, metric: cloudwatch.IMetric, what: string, evaluationPeriods = 1): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      metric,
      alarmDescription: `s3zip: ${what}`,
      threshold: 1,
      evaluationPeriods,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /** One SlowDown filter per function, all into one metric (no dimensions): its sum is the workflow's. */
  private slowDownFilters(workflow: MonitoredWorkflow, period: Duration): cloudwatch.Metric {
    for (const fn of workflow.functions) {
      const m = { name: SLOW_DOWNS_METRIC, function: fn, msg: SLOW_DOWNS_MSG, field: SLOW_DOWNS_FIELD };
      this.metricFilter(workflow.namespace, m, `${SLOW_DOWNS_METRIC}Filter${fn.node.id}`);
    }
    return new cloudwatch.Metric({ namespace: workflow.namespace, metricName: SLOW_DOWNS_METRIC, statistic: cloudwatch.Stats.SUM, period });
  }

  private metricFilter(namespace: string, m: LoggedMetric, id = `${m.name}Filter`): cloudwatch.Metric {
    const filter = new logs.MetricFilter(this, id, {
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
    const slowDowns = new cloudwatch.GraphWidget({ title: 'S3 SlowDown answers (retried)', left: [this.metrics[SLOW_DOWNS_METRIC]], width: 12 });
    const charts = workflow.charts.map(
      (c) => new cloudwatch.GraphWidget({ title: c.title, left: c.metrics.map((name) => this.metrics[name]), width: 12 }),
    );
    return new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName, widgets: [[runs, throttled], charts, [slowDowns]] });
  }
}

/** The sum of the functions' Throttles. */
function throttles(functions: lambda.Function[], period: Duration): cloudwatch.IMetric {
  const usingMetrics = Object.fromEntries(functions.map((fn, i) => [`t${i}`, fn.metricThrottles({ period, statistic: cloudwatch.Stats.SUM })]));
  return new cloudwatch.MathExpression({ expression: `SUM([${Object.keys(usingMetrics).join(', ')}])`, usingMetrics, label: 'Throttles', period });
}
