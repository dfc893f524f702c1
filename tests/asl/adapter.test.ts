/**
 * The local Step Functions (aws-local-stepfunctions behind tests/asl/adapter.ts) keeps what
 * Step Functions does where the emulator's defaults differ.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderDefinition } from '../../infra/lib/asl';
import { REALISTIC_SUBSTITUTIONS } from '../cdk/fixtures';
import { adaptDefinition, type Json } from './adapter';

function tasks(def: Json, out: Record<string, Json> = {}): Record<string, Json> {
  for (const [name, state] of Object.entries<Json>(def.States)) {
    if (state.Type === 'Task') out[name] = state;
    const processor = state.ItemProcessor ?? state.Iterator;
    if (processor) tasks(processor, out);
    for (const branch of state.Branches ?? []) tasks(branch, out);
  }
  return out;
}

test('a Task without TimeoutSeconds runs as long as on Step Functions (99,999,999 s), not the emulator\'s 60 s', () => {
  const definition = renderDefinition(REALISTIC_SUBSTITUTIONS);
  const declared = tasks(definition);
  const untimed = Object.keys(declared).filter((n) => declared[n].TimeoutSeconds === undefined && declared[n].TimeoutSecondsPath === undefined);
  assert.ok(untimed.includes('PlanArchive'), `PlanArchive declares no TimeoutSeconds (the test's premise); untimed: ${untimed.join(', ')}`);
  const adapted = tasks(adaptDefinition(definition, { invoke: async () => ({}), adapter: async () => ({}), executionName: 'timeouts' }).definition);
  for (const name of untimed) {
    assert.ok(adapted[name].TimeoutSeconds >= 24 * 3600, `${name}: TimeoutSeconds ${adapted[name].TimeoutSeconds} after adapting, want no limit short of Lambda's 900 s and more`);
  }
  for (const [name, state] of Object.entries<Json>(declared)) {
    if (state.TimeoutSeconds !== undefined) assert.equal(adapted[name]?.TimeoutSeconds ?? state.TimeoutSeconds, state.TimeoutSeconds, `${name} keeps its own TimeoutSeconds`);
  }
});
