// Calico's label selector language, as policies, IP pools and BGP peers write it:
//   all()   global()   has(k)   !has(k)   k == 'v'   k != 'v'   k in {'a','b'}   k not in {...}
//   k contains 's'   k starts with 's'   k ends with 's'   a && b   a || b   !a   ( ... )
// Parsed once into a tree (printable in one canonical text, so equal selectors share one set)
// and compiled into a predicate over a label map. As in Calico: a missing label makes ==,
// in, contains, starts with and ends with false, and != and not in true; an empty selector
// is all().

export type Labels = Readonly<Record<string, string>>;
export type Selector = (labels: Labels) => boolean;

export class SelectorError extends Error {
  constructor(
    readonly reason: string,
    /** Offset in the selector text (0 = its first character). */
    readonly position: number,
  ) {
    super(`${reason} at position ${position}`);
    this.name = 'SelectorError';
  }
}

export type ValueOperator = '==' | '!=' | 'contains' | 'starts with' | 'ends with';

export type SelectorNode =
  | { readonly op: 'all' }
  /** Non-namespaced endpoints (host endpoints, global network sets); namespaceSelector only. */
  | { readonly op: 'global' }
  | { readonly op: 'has'; readonly key: string }
  | { readonly op: ValueOperator; readonly key: string; readonly value: string }
  | { readonly op: 'in' | 'not in'; readonly key: string; readonly values: readonly string[] }
  | { readonly op: '!'; readonly operand: SelectorNode }
  | { readonly op: '&&' | '||'; readonly operands: readonly SelectorNode[] };

export interface SelectorOptions {
  /** Accept global(): true for a namespaceSelector, which may pick non-namespaced endpoints. */
  allowGlobal?: boolean;
}

const LABEL = /[A-Za-z0-9_./-]+/y;
const WORD_END = /(?![A-Za-z0-9_./-])/y;

class Scanner {
  pos = 0;
  constructor(
    readonly src: string,
    readonly options: SelectorOptions,
  ) {}

  fail(reason: string, at = this.pos): never {
    throw new SelectorError(reason, at);
  }
  skip(): void {
    while (this.pos < this.src.length && /\s/.test(this.src[this.pos]!)) this.pos++;
  }
  atEnd(): boolean {
    this.skip();
    return this.pos >= this.src.length;
  }
  /** Consumes `s` if the text continues with it (a whole word when `word`). */
  take(s: string, word = false): boolean {
    this.skip();
    if (!this.src.startsWith(s, this.pos)) return false;
    if (word) {
      WORD_END.lastIndex = this.pos + s.length;
      if (!WORD_END.test(this.src)) return false;
    }
    this.pos += s.length;
    return true;
  }
  expect(s: string, what = `'${s}'`): void {
    if (!this.take(s)) this.fail(`expected ${what}`);
  }
  label(what: string): string {
    this.skip();
    LABEL.lastIndex = this.pos;
    const m = LABEL.exec(this.src);
    if (!m) this.fail(`expected ${what}`);
    this.pos += m[0].length;
    return m[0];
  }
  string(): string {
    this.skip();
    const q = this.src[this.pos];
    if (q !== "'" && q !== '"') this.fail('expected a quoted value');
    const end = this.src.indexOf(q, this.pos + 1);
    if (end < 0) this.fail('unterminated string');
    const v = this.src.slice(this.pos + 1, end);
    this.pos = end + 1;
    return v;
  }
}

/** The selector as a tree; an empty or blank text is all(). */
export function parseSelectorAst(src: string, options: SelectorOptions = {}): SelectorNode {
  const s = new Scanner(src, options);
  if (s.atEnd()) return { op: 'all' };
  const node = or(s);
  if (!s.atEnd()) s.fail(`unexpected '${src[s.pos]}'`);
  return node;
}

function or(s: Scanner): SelectorNode {
  const operands = [and(s)];
  while (s.take('||')) operands.push(and(s));
  return operands.length === 1 ? operands[0]! : { op: '||', operands };
}

function and(s: Scanner): SelectorNode {
  const operands = [unary(s)];
  while (s.take('&&')) operands.push(unary(s));
  return operands.length === 1 ? operands[0]! : { op: '&&', operands };
}

function unary(s: Scanner): SelectorNode {
  if (s.atEnd()) s.fail('unexpected end of selector');
  // `!=` only follows a label, so a `!` here is a negation.
  if (s.take('!')) return { op: '!', operand: unary(s) };
  if (s.take('(')) {
    const inner = or(s);
    s.expect(')');
    return inner;
  }
  const start = s.pos;
  for (const fn of ['all', 'global', 'has'] as const) {
    const save = s.pos;
    if (!s.take(fn, true)) continue;
    if (!s.take('(')) {
      s.pos = save;
      continue;
    }
    if (fn === 'has') {
      const key = s.label('a label name in has()');
      s.expect(')');
      return { op: 'has', key };
    }
    s.expect(')', `')' after ${fn}(`);
    if (fn === 'global' && !s.options.allowGlobal) s.fail('global() is only allowed in a namespaceSelector', start);
    return { op: fn };
  }
  const key = s.label('a label name, all(), has(), ! or (');
  const opAt = s.pos;
  if (s.take('==')) return { op: '==', key, value: s.string() };
  if (s.take('!=')) return { op: '!=', key, value: s.string() };
  if (s.take('contains', true)) return { op: 'contains', key, value: s.string() };
  if (s.take('starts', true)) {
    if (!s.take('with', true)) s.fail("expected 'with' after 'starts'");
    return { op: 'starts with', key, value: s.string() };
  }
  if (s.take('ends', true)) {
    if (!s.take('with', true)) s.fail("expected 'with' after 'ends'");
    return { op: 'ends with', key, value: s.string() };
  }
  if (s.take('in', true)) return { op: 'in', key, values: valueSet(s) };
  if (s.take('not', true)) {
    if (!s.take('in', true)) s.fail("expected 'in' after 'not'");
    return { op: 'not in', key, values: valueSet(s) };
  }
  s.skip();
  return s.fail(`expected an operator (==, !=, in, not in, contains, starts with, ends with) after '${key}'`, s.atEnd() ? opAt : s.pos);
}

function valueSet(s: Scanner): string[] {
  s.expect('{');
  const values = new Set<string>();
  while (!s.take('}')) {
    values.add(s.string());
    if (s.take('}')) break;
    s.expect(',', "',' or '}'");
  }
  return [...values].sort();
}

/** The predicate of a parsed selector. global() is false: podroute has no non-namespaced endpoints. */
export function compileSelector(node: SelectorNode): Selector {
  switch (node.op) {
    case 'all':
      return () => true;
    case 'global':
      return () => false;
    case 'has': {
      const k = node.key;
      return (l) => Object.hasOwn(l, k);
    }
    case '==': {
      const { key, value } = node;
      return (l) => Object.hasOwn(l, key) && l[key] === value;
    }
    case '!=': {
      const { key, value } = node;
      return (l) => !Object.hasOwn(l, key) || l[key] !== value;
    }
    case 'contains': {
      const { key, value } = node;
      return (l) => Object.hasOwn(l, key) && l[key]!.includes(value);
    }
    case 'starts with': {
      const { key, value } = node;
      return (l) => Object.hasOwn(l, key) && l[key]!.startsWith(value);
    }
    case 'ends with': {
      const { key, value } = node;
      return (l) => Object.hasOwn(l, key) && l[key]!.endsWith(value);
    }
    case 'in': {
      const { key } = node;
      const set = new Set(node.values);
      return (l) => Object.hasOwn(l, key) && set.has(l[key]!);
    }
    case 'not in': {
      const { key } = node;
      const set = new Set(node.values);
      return (l) => !Object.hasOwn(l, key) || !set.has(l[key]!);
    }
    case '!': {
      const a = compileSelector(node.operand);
      return (l) => !a(l);
    }
    case '&&': {
      const all = node.operands.map(compileSelector);
      return (l) => all.every((f) => f(l));
    }
    case '||': {
      const any = node.operands.map(compileSelector);
      return (l) => any.some((f) => f(l));
    }
  }
}

/** Parses and compiles; throws SelectorError naming the position. */
export function parseSelector(src: string, options: SelectorOptions = {}): Selector {
  return compileSelector(parseSelectorAst(src, options));
}

const quote = (v: string): string => (v.includes('"') ? `'${v}'` : `"${v}"`);

/** One canonical text per tree: sets sorted, && and || parenthesised when nested. */
export function formatSelector(node: SelectorNode, nested = false): string {
  switch (node.op) {
    case 'all':
    case 'global':
      return `${node.op}()`;
    case 'has':
      return `has(${node.key})`;
    case 'in':
    case 'not in':
      return `${node.key} ${node.op} {${node.values.map(quote).join(', ')}}`;
    case '!':
      return `!${formatSelector(node.operand, true)}`;
    case '&&':
    case '||': {
      const text = node.operands.map((o) => formatSelector(o, true)).join(` ${node.op} `);
      return nested ? `(${text})` : text;
    }
    default:
      return `${node.key} ${node.op} ${quote(node.value)}`;
  }
}

/** The canonical text of a selector (what formatSelector prints for its tree). */
export function canonicalSelector(src: string, options: SelectorOptions = {}): string {
  return formatSelector(parseSelectorAst(src, options));
}

/** Whether global() appears anywhere in the tree. */
export function selectorUsesGlobal(node: SelectorNode): boolean {
  if (node.op === 'global') return true;
  if (node.op === '!') return selectorUsesGlobal(node.operand);
  if (node.op === '&&' || node.op === '||') return node.operands.some(selectorUsesGlobal);
  return false;
}
