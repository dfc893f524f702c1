/**
 * endedTargets: the rule that tells a target an archive run ended is the README's
 * (examples/notify/rule.json) with this state machine's ARN, and exists only when asked for.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { build, logicalId, render, resourcesOfType } from './helpers';

const RULE_JSON = path.resolve(__dirname, '..', '..', 'examples', 'notify', 'rule.json');

describe('a notice when a run ends (endedTargets)', () => {
  test('none by default: the request rule is the only rule', () => {
    const b = build({}, { nag: false });
    assert.deepEqual(
      resourcesOfType(b.json, 'AWS::Events::Rule').map(([id]) => id),
      [logicalId(b.stack, b.workflow.requestRule)],
    );
    assert.equal(b.workflow.endedRule, undefined);
  });

  test("with a target: the README's rule, this state machine's ARN in it, the event delivered unchanged", () => {
    let queue: sqs.Queue | undefined;
    const b = build(
      (s) => {
        queue = new sqs.Queue(s, 'Notices');
        return { endedTargets: [new targets.SqsQueue(queue)] };
      },
      { nag: false },
    );
    const rule = b.workflow.endedRule;
    assert.ok(rule, 'no ended rule');
    const props = b.json.Resources[logicalId(b.stack, rule)].Properties!;
    const smArn = render(b.stack.resolve(b.workflow.stateMachine.stateMachineArn));
    const want = JSON.parse(fs.readFileSync(RULE_JSON, 'utf8').replace('STATE_MACHINE_ARN', smArn));
    const got = JSON.parse(JSON.stringify(props.EventPattern, (_k, v) => (v && typeof v === 'object' && ('Ref' in v || 'Fn::GetAtt' in v) ? render(v) : v)));
    assert.deepEqual(got, want);
    assert.equal(props.Targets.length, 1);
    assert.equal(render(props.Targets[0].Arn), render(b.stack.resolve(queue!.queueArn)));
    assert.equal(props.Targets[0].Input, undefined, 'the event must reach the target unchanged');
    assert.equal(props.Targets[0].InputTransformer, undefined, 'the event must reach the target unchanged');
  });
});
