/**
 * The workflow's ASL file and its placeholders.
 *
 * statemachine/archive.asl.json is the single source of truth. CDK uploads it unchanged
 * (DefinitionBody.fromFile) and CloudFormation replaces each `${Name}` with the matching
 * DefinitionSubstitutions value as plain text *before* it parses the JSON. Every placeholder
 * stands inside a JSON string, so the file is plain JSON before and after substitution;
 * numbers that vary (batch sizes, concurrency) come from the state the planner writes
 * (`MaxItemsPerBatchPath`, `MaxConcurrencyPath`). renderDefinition does exactly what
 * CloudFormation does, for tests and for the local runner.
 */
import * as fs from 'node:fs';
import { ARCHIVE_ASL_PATH } from './paths';

/** Placeholders whose values are Lambda function ARNs (JSON strings in the file). */
export const FUNCTION_ARN_PLACEHOLDERS = [
  'PlannerFunctionArn',
  'ReaderFunctionArn',
  'WorkerFunctionArn',
  'FinalizerFunctionArn',
  'AbortFunctionArn',
] as const;

/** Every placeholder; each stands inside a JSON string (quoted in the file). */
export const STRING_PLACEHOLDERS = [...FUNCTION_ARN_PLACEHOLDERS, 'MapExecutionType'] as const;

export type Placeholder = (typeof STRING_PLACEHOLDERS)[number];

const PLACEHOLDER_RE = /\$\{([A-Za-z0-9_]+)\}/g;

/** The raw template text. */
export function readArchiveTemplate(file: string = ARCHIVE_ASL_PATH): string {
  return fs.readFileSync(file, 'utf8');
}

/** Every distinct `${Name}` in a template, sorted. */
export function placeholdersIn(template: string): string[] {
  const names = new Set<string>();
  for (const m of template.matchAll(PLACEHOLDER_RE)) names.add(m[1]);
  return [...names].sort();
}

/**
 * Substitutes placeholders the way CloudFormation's DefinitionSubstitutions does (plain
 * text) and parses the result. Throws if a placeholder has no value, so a template that
 * gained a placeholder cannot silently render.
 */
export function renderDefinition(
  substitutions: Record<string, string | number>,
  template: string = readArchiveTemplate(),
): Record<string, unknown> {
  const missing = placeholdersIn(template).filter((name) => !(name in substitutions));
  if (missing.length > 0) {
    throw new Error(`ASL placeholders without a substitution: ${missing.join(', ')}`);
  }
  const text = template.replace(PLACEHOLDER_RE, (_whole, name: string) => String(substitutions[name]));
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`ASL is not valid JSON after substitution: ${(err as Error).message}`);
  }
}
