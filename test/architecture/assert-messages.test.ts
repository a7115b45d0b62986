// Every assert.ok / assert() under test/ carries a message. Without one, a failing call makes
// Node's assert build a message from the source of the failing expression; under tsx that source
// is long transformed lines, and Node spins in findColumn for minutes, synchronously, past
// mocha's timeout (a CI run hung on it). The checker reads every .ts file under test/ with the
// TypeScript parser (tsgo, through its API) and fails naming file:line for a call without one.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Expression, type Node, type SourceFile, SyntaxKind } from 'typescript/unstable/ast';
import {
  isCallExpression,
  isIdentifier,
  isImportDeclaration,
  isNamedImports,
  isNamespaceImport,
  isPropertyAccessExpression,
  isSpreadElement,
  isStringLiteral,
} from 'typescript/unstable/ast/is';
import { API } from 'typescript/unstable/sync';

const root = fileURLToPath(new URL('../..', import.meta.url));
const testDir = join(root, 'test');
const toPosix = (p: string) => p.split(sep).join('/');

const ASSERT_MODULES = new Set(['assert', 'node:assert', 'assert/strict', 'node:assert/strict']);

/** Every .ts file under test/ (not .d.ts), absolute. */
function testFiles(dir = testDir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...testFiles(p));
    else if (/\.[mc]?ts$/.test(name) && !/\.d\.[mc]?ts$/.test(name)) out.push(p);
  }
  return out.sort();
}

/** The names a file binds to node:assert: `asserts` is called and has `.ok`; `oks` is `ok` itself. */
function assertBindings(sf: SourceFile): { asserts: Set<string>; oks: Set<string> } {
  const asserts = new Set(['assert']);
  const oks = new Set<string>();
  for (const s of sf.statements) {
    if (!isImportDeclaration(s) || !isStringLiteral(s.moduleSpecifier) || !ASSERT_MODULES.has(s.moduleSpecifier.text)) continue;
    const clause = s.importClause;
    if (clause?.name) asserts.add(clause.name.text);
    const bindings = clause?.namedBindings;
    if (bindings && isNamespaceImport(bindings)) asserts.add(bindings.name.text);
    if (bindings && isNamedImports(bindings)) {
      for (const el of bindings.elements) {
        const imported = el.propertyName && isIdentifier(el.propertyName) ? el.propertyName.text : el.name.text;
        if (imported === 'ok') oks.add(el.name.text);
        if (imported === 'strict' || imported === 'default') asserts.add(el.name.text);
      }
    }
  }
  return { asserts, oks };
}

/** Is this callee assert itself, assert.ok, assert.strict or assert.strict.ok (or an imported ok)? */
function isOkCallee(e: Expression, asserts: Set<string>, oks: Set<string>): boolean {
  if (isIdentifier(e)) return asserts.has(e.text) || oks.has(e.text);
  if (!isPropertyAccessExpression(e) || !isIdentifier(e.name)) return false;
  if (e.name.text === 'ok' || e.name.text === 'strict') return isOkCallee(e.expression, asserts, new Set());
  return false;
}

/** A message Node would build itself: none, or undefined/null given for it. */
function lacksMessage(args: readonly Expression[]): boolean {
  if (args.length === 0 || args.some((a) => isSpreadElement(a))) return false; // no value: Node says so without reading source
  if (args.length === 1) return true;
  const m = args[1]!;
  return m.kind === SyntaxKind.NullKeyword || (isIdentifier(m) && m.text === 'undefined');
}

/** The `file:line: call` of every assert.ok / assert() call in the file without a message. */
function messagelessCalls(sf: SourceFile, file: string): string[] {
  const { asserts, oks } = assertBindings(sf);
  const out: string[] = [];
  const visit = (node: Node): void => {
    if (isCallExpression(node) && isOkCallee(node.expression, asserts, oks) && lacksMessage(node.arguments)) {
      const start = node.getStart(sf);
      const line = sf.getLineAndCharacterOfPosition(start).line + 1;
      const text = sf.text.slice(start, node.end).replace(/\s+/g, ' ');
      out.push(`${file}:${line}: ${text.length > 100 ? `${text.slice(0, 100)}…` : text}`);
    }
    node.forEachChild(visit);
  };
  visit(sf);
  return out;
}

// What the checker must flag (by line) and leave alone, parsed as one more file of the program.
const FIXTURE_LINES = [
  "import assert, { ok, ok as yes, strict as sa } from 'node:assert/strict';", // 1
  "import * as na from 'node:assert';", // 2
  'assert.ok(a);', // 3: flagged
  'assert(a);', // 4: flagged
  'ok(a);', // 5: flagged
  'yes(a.includes(b, c));', // 6: flagged, commas inside
  `sa.ok(\`\${a}, \${b}\`);`, // 7: flagged
  'na.strict.ok(f(a, b));', // 8: flagged
  'assert.ok(', // 9: flagged, over lines
  '  a,', // 10
  ');', // 11
  'assert.ok(a, undefined);', // 12: flagged
  "assert.ok(a, 'why');", // 13
  `assert(a, \`why \${b}\`);`, // 14
  'assert.equal(a, true);', // 15: Node writes this message without reading source
  'assert.ok(...args);', // 16: left alone
  'assert.ok();', // 17: left alone
  'other.ok(a);', // 18: not assert
  "const s = 'assert.ok(a);';", // 19: a string
  '// assert.ok(a);', // 20: a comment
];
const FIXTURE = join(testDir, 'style', '__assert_messages_fixture__.ts');

describe('style: every assert.ok and assert() in test/ has a message', function () {
  this.timeout(60_000);
  let api: API | undefined;
  let files: string[];
  const sources = new Map<string, SourceFile>();

  before(() => {
    files = testFiles();
    // A program of exactly these files, nothing resolved or type-checked: parsing is all we need.
    const config = join(testDir, 'style', '__assert_messages_tsconfig__.json');
    const configText = JSON.stringify({
      compilerOptions: { noResolve: true, noLib: true, types: [], allowImportingTsExtensions: true, noEmit: true },
      files: [...files, FIXTURE],
    });
    api = new API({
      cwd: root,
      fs: {
        readFile: (f) => (f === config ? configText : f === FIXTURE ? FIXTURE_LINES.join('\n') : undefined),
        fileExists: (f) => (f === config || f === FIXTURE ? true : undefined),
      },
    });
    const project = api.updateSnapshot({ openProjects: [config] }).getProjects()[0];
    assert.ok(project, `tsgo opened no project for ${config}`);
    for (const f of [...files, FIXTURE]) {
      const sf = project.program.getSourceFile(f);
      if (sf) sources.set(f, sf);
    }
  });

  after(() => api?.close());

  it('parses every .ts file under test/', () => {
    const missing = files.filter((f) => !sources.has(f)).map((f) => toPosix(relative(root, f)));
    assert.ok(files.length > 100, `only ${files.length} .ts files found under ${testDir}`);
    assert.equal(missing.length, 0, `not parsed: ${missing.join(', ')}`);
  });

  it('no assert.ok(x) or assert(x) without a message', () => {
    const bad = files.flatMap((f) => {
      const sf = sources.get(f);
      return sf ? messagelessCalls(sf, toPosix(relative(root, f))) : [];
    });
    assert.equal(
      bad.length,
      0,
      `${bad.length} assert.ok/assert() calls without a message; give each one (Node would read the source to make one, ` +
        `which hangs under tsx):\n${bad.join('\n')}`,
    );
  });

  it('the checker flags what it should and nothing else', () => {
    const sf = sources.get(FIXTURE);
    assert.ok(sf, 'the fixture was not parsed');
    const lines = messagelessCalls(sf, 'fixture').map((l) => Number(l.split(':')[1]));
    assert.equal(lines.join(' '), '3 4 5 6 7 8 9 12', `flagged lines of the fixture: ${lines.join(' ')}`);
  });
});
