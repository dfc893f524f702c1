/**
 * The shape rule tests/layout holds for Go (shape_test.go), for the TypeScript of infra/: no
 * function, method, constructor or function literal over 80 lines (signature to closing brace) or
 * with more than 5 parameters. Parsed with the TypeScript compiler's own parser (the `typescript`
 * devDependency), so what counts as a function is what tsc says it is.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { REPO_ROOT } from './helpers';

/** The limits, as tests/layout's maxFuncLines and maxFuncParams. */
const MAX_LINES = 80;
const MAX_PARAMS = 5;

/** Where the rule holds: the constructs and the app. Compiled output (infra/dist) is not source. */
const ROOTS = ['infra'];
const SKIP_DIRS = new Set(['node_modules', 'dist']);

interface Oversize {
  at: string;
  name: string;
  over: 'lines' | 'parameters';
  size: number;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return SKIP_DIRS.has(e.name) ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

function nameOf(fn: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(fn)) return `${(fn.parent as ts.ClassDeclaration).name?.text ?? 'class'}.constructor`;
  if (fn.name) {
    const own = fn.name.getText(sf);
    const cls = ts.isClassLike(fn.parent) ? fn.parent.name?.text : undefined;
    return cls ? `${cls}.${own}` : own;
  }
  // A literal takes the name it is bound to, if any.
  const p = fn.parent;
  if (p && (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) && p.name) return p.name.getText(sf);
  return '(function literal)';
}

/** The functions of one source text over a limit. */
export function oversizeIn(fileName: string, text: string): Oversize[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: Oversize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.SignatureDeclaration;
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const at = `${fileName}:${first + 1}`;
      if (last - first + 1 > MAX_LINES) out.push({ at, name: nameOf(fn, sf), over: 'lines', size: last - first + 1 });
      if (fn.parameters.length > MAX_PARAMS) out.push({ at, name: nameOf(fn, sf), over: 'parameters', size: fn.parameters.length });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

function describeOversize(o: Oversize): string {
  const fix =
    o.over === 'lines'
      ? 'split it into its steps, a function each, named from the domain'
      : 'gather the parameters that are one thing in a type (an options interface, the props it belongs to)';
  return `${o.at}: ${o.name} has ${o.size} ${o.over}, at most ${o.over === 'lines' ? MAX_LINES : MAX_PARAMS}: ${fix}`;
}

describe('TypeScript shape (infra/)', () => {
  test('no function over 80 lines or 5 parameters', () => {
    const files = ROOTS.flatMap((r) => sourceFiles(path.join(REPO_ROOT, r)));
    assert.ok(files.length >= 5, `found only ${files.length} TypeScript files under ${ROOTS.join(', ')}`);
    const found = files.flatMap((f) => oversizeIn(path.relative(REPO_ROOT, f), fs.readFileSync(f, 'utf8')));
    assert.deepEqual(found.map(describeOversize), []);
  });

  test('the rule sees what it must: declarations, methods, constructors, arrows, and their parameters', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  x += ${i};`).join('\n');
    const text = [
      `function long(): void {\n  let x = 0;\n${body(78)}\n}`, // 81 lines
      'function wide(a: number, b: number, c: number, d: number, e: number, f: number): void {}',
      'function fits(a: number, b: number, c: number, d: number, e: number): void {}',
      `class Workflow {\n  constructor() {\n    let x = 0;\n${body(78)}\n  }\n  private grant(a: 1, b: 2, c: 3, d: 4, e: 5, f: 6): void {}\n}`,
      `const make = (a: 1, b: 2, c: 3, d: 4, e: 5, f: 6) => a;`,
      `const short = () => {\n  let x = 0;\n${body(77)}\n};`, // 80 lines: fits
    ].join('\n');
    const found = oversizeIn('sample.ts', text).map((o) => `${o.name} ${o.over} ${o.size}`);
    assert.deepEqual(found.sort(), ['Workflow.constructor lines 81', 'Workflow.grant parameters 6', 'long lines 81', 'make parameters 6', 'wide parameters 6']);
  });
});
