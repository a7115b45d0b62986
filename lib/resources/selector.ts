// Calico's label selector language, the subset people write for nodeSelector:
//   all()   has(k)   !has(k)   k == 'v'   k != 'v'   k in {'a','b'}   k not in {...}
//   a && b   a || b   !a   ( ... )
// Compiled once to a predicate over a label map.

export type Labels = Readonly<Record<string, string>>;
export type Selector = (labels: Labels) => boolean;

export class SelectorError extends Error {}

type Tok = { t: 'id' | 'str' | 'op'; v: string; at: number };

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (['==', '!=', '&&', '||'].includes(two)) {
      out.push({ t: 'op', v: two, at: i });
      i += 2;
      continue;
    }
    if ('!(){},'.includes(c)) {
      out.push({ t: 'op', v: c, at: i });
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      const end = src.indexOf(c, i + 1);
      if (end < 0) throw new SelectorError(`unterminated string at ${i}`);
      out.push({ t: 'str', v: src.slice(i + 1, end), at: i });
      i = end + 1;
      continue;
    }
    const m = /^[A-Za-z0-9_./-]+/.exec(src.slice(i));
    if (!m) throw new SelectorError(`unexpected '${c}' at ${i}`);
    out.push({ t: 'id', v: m[0], at: i });
    i += m[0].length;
  }
  return out;
}

export function parseSelector(src: string): Selector {
  if (src.trim() === '') return () => true;
  const toks = tokenize(src);
  let p = 0;
  const peek = (): Tok | undefined => toks[p];
  const expect = (v: string): void => {
    const t = toks[p++];
    if (!t || t.v !== v) throw new SelectorError(`expected '${v}' at ${t ? t.at : src.length}`);
  };
  const str = (): string => {
    const t = toks[p++];
    if (t?.t !== 'str') throw new SelectorError(`expected a quoted value at ${t ? t.at : src.length}`);
    return t.v;
  };
  const set = (): Set<string> => {
    expect('{');
    const vals = new Set<string>();
    if (peek()?.v !== '}') {
      vals.add(str());
      while (peek()?.v === ',') {
        p++;
        vals.add(str());
      }
    }
    expect('}');
    return vals;
  };
  const or = (): Selector => {
    let l = and();
    while (peek()?.v === '||') {
      p++;
      const a = l,
        b = and();
      l = (x) => a(x) || b(x);
    }
    return l;
  };
  const and = (): Selector => {
    let l = unary();
    while (peek()?.v === '&&') {
      p++;
      const a = l,
        b = unary();
      l = (x) => a(x) && b(x);
    }
    return l;
  };
  const unary = (): Selector => {
    const t = peek();
    if (!t) throw new SelectorError('unexpected end of selector');
    if (t.v === '!' && t.t === 'op') {
      p++;
      const a = unary();
      return (x) => !a(x);
    }
    if (t.v === '(' && t.t === 'op') {
      p++;
      const a = or();
      expect(')');
      return a;
    }
    if (t.t !== 'id') throw new SelectorError(`unexpected '${t.v}' at ${t.at}`);
    p++;
    if (t.v === 'all' && peek()?.v === '(') {
      p++;
      expect(')');
      return () => true;
    }
    if (t.v === 'has' && peek()?.v === '(') {
      p++;
      const k = toks[p++];
      if (k?.t !== 'id') throw new SelectorError(`expected a label name at ${k ? k.at : src.length}`);
      expect(')');
      return (x) => Object.hasOwn(x, k.v);
    }
    const key = t.v;
    const op = toks[p++];
    if (!op) throw new SelectorError(`expected an operator after '${key}'`);
    if (op.v === '==') {
      const v = str();
      return (x) => x[key] === v;
    }
    if (op.v === '!=') {
      const v = str();
      return (x) => x[key] !== v;
    }
    if (op.v === 'in') {
      const s = set();
      return (x) => x[key] !== undefined && s.has(x[key]!);
    }
    if (op.v === 'not' && peek()?.v === 'in') {
      p++;
      const s = set();
      return (x) => x[key] === undefined || !s.has(x[key]!);
    }
    throw new SelectorError(`unknown operator '${op.v}' at ${op.at}`);
  };
  const sel = or();
  if (p !== toks.length) throw new SelectorError(`unexpected '${toks[p]!.v}' at ${toks[p]!.at}`);
  return sel;
}
