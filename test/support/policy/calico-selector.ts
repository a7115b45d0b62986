// Calico's label selector language, the part the policy tests write: all(), has(k), k == 'v',
// k != 'v', k in {'a','b'}, k not in {…}, !, &&, || and parentheses (no global(): the model
// has no endpoint outside a namespace). The reference evaluator's
// own small parser, from Calico's documentation, so that it does not share a bug with
// lib/resources' selector. As Calico says, `!=` and `not in` also match a missing key.
import type { Labels } from './model.js';

type Node =
  | { op: 'all' }
  | { op: 'has'; key: string }
  | { op: 'eq' | 'ne'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: string[] }
  | { op: 'not'; a: Node }
  | { op: 'and' | 'or'; a: Node; b: Node };

const TOKEN = /\s*(\|\||&&|==|!=|[(){},!]|'[^']*'|"[^"]*"|[A-Za-z0-9_./-]+)/y;

function tokenize(text: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (!m) {
      if (/^\s*$/.test(text.slice(at))) break;
      throw new Error(`selector ${JSON.stringify(text)}: cannot read at ${at}`);
    }
    out.push(m[1]!);
  }
  return out;
}

export function parseCalicoSelector(text: string): (labels: Labels) => boolean {
  const t = tokenize(text);
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(`selector ${JSON.stringify(text)}: ${what} at token ${i} (${JSON.stringify(t[i] ?? 'end')})`);
  };
  const take = (want?: string): string => {
    const tok = t[i];
    if (tok === undefined || (want !== undefined && tok !== want)) fail(`expected ${want ?? 'a token'}`);
    i++;
    return tok!;
  };
  const str = (): string => {
    const tok = take();
    if (!/^['"]/.test(tok)) fail('expected a quoted string');
    return tok.slice(1, -1);
  };
  const or = (): Node => {
    let a = and();
    while (t[i] === '||') {
      i++;
      a = { op: 'or', a, b: and() };
    }
    return a;
  };
  const and = (): Node => {
    let a = unary();
    while (t[i] === '&&') {
      i++;
      a = { op: 'and', a, b: unary() };
    }
    return a;
  };
  const unary = (): Node => {
    if (t[i] === '!') {
      i++;
      return { op: 'not', a: unary() };
    }
    return primary();
  };
  const primary = (): Node => {
    const tok = take();
    if (tok === '(') {
      const e = or();
      take(')');
      return e;
    }
    if (tok === 'all' && t[i] === '(') {
      take('(');
      take(')');
      return { op: 'all' };
    }
    if (tok === 'has' && t[i] === '(') {
      take('(');
      const key = take();
      take(')');
      return { op: 'has', key };
    }
    if (/^['"(){},!]/.test(tok)) fail('expected a label key');
    const key = tok;
    const op = take();
    if (op === '==' || op === '!=') return { op: op === '==' ? 'eq' : 'ne', key, value: str() };
    const set = (): string[] => {
      take('{');
      const values: string[] = [];
      while (t[i] !== '}') {
        values.push(str());
        if (t[i] === ',') i++;
      }
      take('}');
      return values;
    };
    if (op === 'in') return { op: 'in', key, values: set() };
    if (op === 'not' && t[i] === 'in') {
      i++;
      return { op: 'notin', key, values: set() };
    }
    return fail('expected ==, !=, in or not in');
  };
  const tree = t.length === 0 ? ({ op: 'all' } as Node) : or();
  if (i !== t.length) fail('unexpected text');
  const ev = (n: Node, l: Labels): boolean => {
    switch (n.op) {
      case 'all':
        return true;
      case 'has':
        return Object.hasOwn(l, n.key);
      case 'eq':
        return l[n.key] === n.value;
      case 'ne':
        return l[n.key] !== n.value;
      case 'in':
        return Object.hasOwn(l, n.key) && n.values.includes(l[n.key]!);
      case 'notin':
        return !(Object.hasOwn(l, n.key) && n.values.includes(l[n.key]!));
      case 'not':
        return !ev(n.a, l);
      case 'and':
        return ev(n.a, l) && ev(n.b, l);
      case 'or':
        return ev(n.a, l) || ev(n.b, l);
    }
  };
  return (labels) => ev(tree, labels);
}
