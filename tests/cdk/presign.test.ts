/**
 * maxPresignSeconds: whether requests may ask the finalizer for download links (options.presign).
 * Off by default; on, it only tells the functions the longest link (MAX_PRESIGN_SECONDS) and adds
 * no grant: the finalizer's s3:GetObject on the destination, which a link reads with, is there
 * either way (its HEAD check).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FUNCTION_NAMES } from '../../infra/lib/archive-grants';
import { build, list, logicalId, render, statementsOfRole, type Built } from './helpers';

const envOf = (b: Built, name: (typeof FUNCTION_NAMES)[number]) =>
  b.json.Resources[logicalId(b.stack, b.workflow.functions[name])].Properties!.Environment.Variables as Record<string, string>;

const finalizerStatements = (b: Built) =>
  statementsOfRole(b.json, logicalId(b.stack, b.workflow.functions.finalizer.role as any)).map((s) => ({
    sid: s.Sid,
    actions: list(s.Action).sort(),
    resources: list(s.Resource).map(render).sort(),
  }));

describe('download links in the output (maxPresignSeconds)', () => {
  const off = build({ destinationPrefix: 'archives/' });
  const on = build({ destinationPrefix: 'archives/', maxPresignSeconds: 86400 });

  test('off by default: no function is told a link lifetime, so the planner refuses options.presign', () => {
    for (const name of FUNCTION_NAMES) {
      assert.equal(envOf(off, name).MAX_PRESIGN_SECONDS, undefined, name);
    }
  });

  test('on: the planner (which refuses longer links) and the finalizer (which signs) get MAX_PRESIGN_SECONDS', () => {
    assert.equal(envOf(on, 'planner').MAX_PRESIGN_SECONDS, '86400');
    assert.equal(envOf(on, 'finalizer').MAX_PRESIGN_SECONDS, '86400');
  });

  test('on adds no grant; the finalizer reads the destination with s3:GetObject either way', () => {
    assert.deepEqual(finalizerStatements(on), finalizerStatements(off));
    const dest = finalizerStatements(on).find((s) => s.sid === 'DestinationObjectsWrite');
    assert.ok(dest?.actions.includes('s3:GetObject'), `finalizer destination statement: ${JSON.stringify(dest)}`);
    assert.deepEqual(dest?.resources, ['arn:<AWS::Partition>:s3:::s3zip-test-archives/archives/*']);
  });

  test('a lifetime SigV4 does not allow is refused at synth', () => {
    for (const bad of [0, 604801, 1.5]) {
      assert.throws(() => build({ maxPresignSeconds: bad }, { nag: false }), /maxPresignSeconds must be a whole number of seconds from 1 to 604800/);
    }
  });
});
