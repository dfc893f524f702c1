/**
 * The monitoring prop: asked for, both workflows get alarms on failed and timed-out runs, on
 * throttled invocations and on sustained S3 SlowDowns, metric filters on the lines their functions
 * log, and a dashboard; not asked for, none of it. Log retention is set on every log group either way. cdk-nag stays clean.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type { Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { ArchiveWorkflow } from '../../infra/lib/archive-workflow';
import { EXTRACT_FUNCTION_NAMES } from '../../infra/lib/extract-grants';
import { ExtractWorkflow, type ExtractWorkflowProps } from '../../infra/lib/extract-workflow';
import { build, type Built, logicalId, render, resourcesOfType, tempDir } from './helpers';

const EXTRACT_FUNCTIONS = (() => {
  const dir = tempDir('s3zip-cdk-monitoring-functions-');
  for (const name of EXTRACT_FUNCTION_NAMES) {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, 'bootstrap'), `#!/bin/sh\n# placeholder for ${name}\n`, { mode: 0o755 });
  }
  return dir;
})();

/** Both workflows in one stack, each with the given extract props (monitoring among them). */
function bothWorkflows(archive: Parameters<typeof build>[0], extract: Partial<ExtractWorkflowProps>): Built & { extract: ExtractWorkflow } {
  let x!: ExtractWorkflow;
  const b = build(archive, {
    extra: (stack: Stack) => {
      const a = stack.node.findChild('ArchiveWorkflow') as ArchiveWorkflow;
      x = new ExtractWorkflow(stack, 'ExtractWorkflow', { archiveBucket: 's3zip-test-uploads', workBucket: a.workBucket, functionsDir: EXTRACT_FUNCTIONS, ...extract });
    },
  });
  return { ...b, extract: x };
}

const OFF = bothWorkflows({}, {});
let topicArn = '';
const ON = bothWorkflows(
  (stack: Stack) => {
    const topic = new sns.Topic(stack, 'Alarms', { enforceSSL: true });
    topicArn = stack.getLogicalId(topic.node.defaultChild as any);
    return { monitoring: { alarmActions: [new cwActions.SnsAction(topic)] }, logRetention: logs.RetentionDays.ONE_WEEK };
  },
  { monitoring: {}, logRetention: logs.RetentionDays.THREE_MONTHS },
);

const alarmsOf = (b: Built, prefix: string) => resourcesOfType(b.json, 'AWS::CloudWatch::Alarm').filter(([id]) => id.startsWith(prefix));

describe('monitoring', () => {
  test('not asked for: no alarm, metric filter or dashboard', () => {
    for (const type of ['AWS::CloudWatch::Alarm', 'AWS::CloudWatch::Dashboard', 'AWS::Logs::MetricFilter']) {
      assert.deepEqual(resourcesOfType(OFF.json, type), [], type);
    }
    assert.equal(OFF.workflow.monitoring, undefined);
  });

  test('asked for: alarms on failed and timed-out runs of each state machine', () => {
    for (const [prefix, sm] of [['ArchiveWorkflow', OFF.workflow.stateMachine], ['ExtractWorkflow', OFF.extract.stateMachine]] as const) {
      const smId = OFF.stack.getLogicalId(sm.node.defaultChild as any);
      const byMetric = new Map(alarmsOf(ON, prefix).filter(([, a]) => a.Properties!.Namespace === 'AWS/States').map(([, a]) => [a.Properties!.MetricName, a.Properties!]));
      assert.deepEqual([...byMetric.keys()].sort(), ['ExecutionsFailed', 'ExecutionsTimedOut'], prefix);
      for (const a of byMetric.values()) {
        assert.deepEqual(a.Dimensions, [{ Name: 'StateMachineArn', Value: { Ref: smId } }]);
        assert.equal(a.Threshold, 1);
        assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
        assert.equal(a.TreatMissingData, 'notBreaching');
      }
    }
  });

  test("asked for: an alarm on the sum of every function's throttles", () => {
    for (const [prefix, fns] of [['ArchiveWorkflow', Object.values(ON.workflow.functions)], ['ExtractWorkflow', Object.values(ON.extract.functions)]] as const) {
      const [[, alarm]] = alarmsOf(ON, prefix).filter(([, a]) => a.Properties!.Metrics !== undefined);
      const metrics = alarm.Properties!.Metrics as any[];
      const throttled = metrics.filter((m) => m.MetricStat).map((m) => m.MetricStat.Metric);
      assert.ok(throttled.every((m) => m.Namespace === 'AWS/Lambda' && m.MetricName === 'Throttles'));
      assert.deepEqual(
        throttled.map((m) => m.Dimensions[0].Value.Ref).sort(),
        fns.map((fn) => ON.stack.getLogicalId(fn.node.defaultChild as any)).sort(),
      );
      assert.match(metrics.find((m) => m.Expression).Expression, /^SUM\(\[t0(, t\d)+\]\)$/);
    }
  });

  test('asked for: an alarm on S3 SlowDowns, the sum over every function, in each of 3 periods running', () => {
    for (const [prefix, ns] of [['ArchiveWorkflow', 's3zip/TestStack-Archive'], ['ExtractWorkflow', 's3zip/TestStack-Extract']] as const) {
      const alarms = alarmsOf(ON, prefix).filter(([, a]) => a.Properties!.MetricName === 'S3SlowDowns');
      assert.equal(alarms.length, 1, prefix);
      const a = alarms[0][1].Properties!;
      assert.equal(a.Namespace, ns);
      assert.equal(a.Dimensions, undefined);
      assert.equal(a.Statistic, 'Sum');
      assert.equal(a.Period, 300);
      assert.equal(a.Threshold, 1);
      assert.equal(a.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
      assert.equal(a.EvaluationPeriods, 3);
      assert.equal(a.DatapointsToAlarm, undefined); // all 3 of 3
      assert.equal(a.TreatMissingData, 'notBreaching');
    }
  });

  test('S3 SlowDown filters: one per function of each workflow, exact pattern and value, not without monitoring', () => {
    const slowDownFilters = (b: Built) =>
      resourcesOfType(b.json, 'AWS::Logs::MetricFilter')
        .map(([, f]) => f.Properties!)
        .filter((p) => p.MetricTransformations[0].MetricName === 'S3SlowDowns');
    assert.deepEqual(slowDownFilters(OFF), []);
    assert.equal(OFF.extract.monitoring, undefined);
    const filters = slowDownFilters(ON);
    for (const [ns, fns] of [['s3zip/TestStack-Archive', ON.workflow.functions], ['s3zip/TestStack-Extract', ON.extract.functions]] as const) {
      const mine = filters.filter((p) => p.MetricTransformations[0].MetricNamespace === ns);
      assert.deepEqual(
        mine.map((p) => render(p.LogGroupName)).sort(),
        Object.values(fns).map((fn) => `<${logicalId(ON.stack, fn.logGroup as any)}>`).sort(),
        ns,
      );
      for (const p of mine) {
        assert.equal(p.FilterPattern, '{ $.msg = "s3 slowdowns" }');
        assert.deepEqual(p.MetricTransformations, [{ MetricNamespace: ns, MetricName: 'S3SlowDowns', MetricValue: '$.slowDowns' }]);
      }
    }
    assert.equal(filters.length, Object.keys(ON.workflow.functions).length + Object.keys(ON.extract.functions).length);
  });

  test('alarm actions: each alarm notifies the topic when it fires and when it is OK again', () => {
    const archive = alarmsOf(ON, 'ArchiveWorkflow');
    assert.equal(archive.length, 4);
    for (const [, a] of archive) {
      assert.deepEqual(a.Properties!.AlarmActions, [{ Ref: topicArn }]);
      assert.deepEqual(a.Properties!.OKActions, [{ Ref: topicArn }]);
    }
    for (const [, a] of alarmsOf(ON, 'ExtractWorkflow')) assert.equal(a.Properties!.AlarmActions, undefined);
  });

  test('metric filters: the lines the functions log, in a namespace of the state machine', () => {
    const filters = resourcesOfType(ON.json, 'AWS::Logs::MetricFilter').filter(([, f]) => f.Properties!.MetricTransformations[0].MetricName !== 'S3SlowDowns').map(([, f]) => {
      const t = f.Properties!.MetricTransformations[0];
      return `${render(f.Properties!.LogGroupName)} ${f.Properties!.FilterPattern} ${t.MetricNamespace}/${t.MetricName}=${t.MetricValue}`;
    });
    const logs = (b: Built, fn: { logGroup: unknown }) => `<${logicalId(b.stack, fn.logGroup as any)}>`;
    const a = ON.workflow.functions;
    const x = ON.extract.functions;
    assert.deepEqual(filters.sort(), [
      `${logs(ON, a.planner)} { $.msg = "planned" } s3zip/TestStack-Archive/BytesCopied=$.copiedBytes`,
      `${logs(ON, a.planner)} { $.msg = "planned" } s3zip/TestStack-Archive/BytesStreamed=$.streamedBytes`,
      `${logs(ON, a.planner)} { $.msg = "planned" } s3zip/TestStack-Archive/PartsPlanned=$.parts`,
      `${logs(ON, a.worker)} { $.msg = "batch built" } s3zip/TestStack-Archive/PartsBuilt=$.parts`,
      `${logs(ON, x['extract-finalizer'])} { $.msg = "extraction done" } s3zip/TestStack-Extract/ObjectsExtracted=$.objects`,
      `${logs(ON, x['extract-planner'])} { $.msg = "extraction planned" } s3zip/TestStack-Extract/BytesCopied=$.copied`,
      `${logs(ON, x['extract-planner'])} { $.msg = "extraction planned" } s3zip/TestStack-Extract/BytesStreamed=$.read`,
      `${logs(ON, x['extract-planner'])} { $.msg = "extraction planned" } s3zip/TestStack-Extract/JobsPlanned=$.jobs`,
    ].sort());
  });

  test('a dashboard per workflow charts runs, throttles, parts, bytes and S3 SlowDowns', () => {
    const dashboards = resourcesOfType(ON.json, 'AWS::CloudWatch::Dashboard');
    assert.equal(dashboards.length, 2);
    const body = (id: string) => JSON.stringify(dashboards.find(([d]) => d.startsWith(id))![1].Properties!.DashboardBody);
    for (const [id, names] of [
      ['ArchiveWorkflow', ['PartsPlanned', 'PartsBuilt', 'BytesStreamed', 'BytesCopied']],
      ['ExtractWorkflow', ['JobsPlanned', 'ObjectsExtracted', 'BytesStreamed', 'BytesCopied']],
    ] as const) {
      const b = body(id);
      for (const m of ['ExecutionsStarted', 'ExecutionsSucceeded', 'ExecutionsFailed', 'ExecutionsTimedOut', 'ExecutionsAborted', 'Throttles', 'S3SlowDowns', ...names]) {
        assert.ok(b.includes(`\\"${m}\\"`), `${id}'s dashboard charts ${m}`);
      }
    }
  });

  test('log retention: every log group of both workflows, one month by default, the prop when set', () => {
    const retention = (b: Built, prefix: string) =>
      resourcesOfType(b.json, 'AWS::Logs::LogGroup')
        .filter(([id]) => id.startsWith(prefix))
        .map(([, g]) => g.Properties!.RetentionInDays);
    assert.deepEqual(retention(OFF, 'ArchiveWorkflow'), Array(6).fill(30));
    assert.deepEqual(retention(OFF, 'ExtractWorkflow'), Array(5).fill(30));
    assert.deepEqual(retention(ON, 'ArchiveWorkflow'), Array(6).fill(7));
    assert.deepEqual(retention(ON, 'ExtractWorkflow'), Array(5).fill(90));
  });

  test('cdk-nag stays clean with monitoring', () => {
    const findings = [
      ...Annotations.fromStack(ON.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*')),
      ...Annotations.fromStack(ON.stack).findWarning('*', Match.stringLikeRegexp('AwsSolutions-.*')),
    ];
    assert.deepEqual(findings.map((f) => `${f.id}: ${String(f.entry.data).slice(0, 160)}`), []);
  });
});
