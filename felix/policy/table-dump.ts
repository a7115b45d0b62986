// The policy table in nft syntax for a person to read: what felix means (its desired table, in
// the words and with the comments it writes, which `nft -f` takes as it is), or what the kernel
// holds, read back by netlink, each line marked where it differs from what felix meant. The
// kernel's rules are known by their comment, which holds their id and a hash of their
// statements: a rule whose comment felix wrote is printed in felix's words; another is named by
// its comment only (its statements are not decoded back into nft text).
import type { InstalledChain, InstalledMap, InstalledSet, InstalledTable } from './dataplane.js';
import { mapDeclaration } from './map-typeof.js';
import type { NftTable } from './nft-model.js';
import { quote, tableRef } from './render.js';
import { declaredSetFlags } from './set-flags.js';
import { ruleComment, tableState } from './table-state.js';

/** A line's mark: in both, only in what felix meant, only in the kernel. */
export type DumpMark = ' ' | '-' | '+';

export interface TableDump {
  readonly text: string;
  /** Whether any line is marked (always false without the kernel's table). */
  readonly differs: boolean;
}

interface Line {
  readonly mark: DumpMark;
  readonly text: string;
}

/** Pairs past which the common subsequence is not worked out (its table is their product). */
const MAX_PAIRS = 4_000_000;

/**
 * The longest common subsequence of two keyed lists, as pairs of indexes. Past MAX_PAIRS, the
 * items of `a` also in `b` in `a`'s order, as far as `b`'s order allows.
 */
function common(a: readonly string[], b: readonly string[]): [number, number][] {
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_PAIRS) {
    const at = new Map(b.map((k, j) => [k, j]));
    const out: [number, number][] = [];
    let last = -1;
    a.forEach((k, i) => {
      const j = at.get(k);
      if (j !== undefined && j > last) {
        out.push([i, j]);
        last = j;
      }
    });
    return out;
  }
  const len: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) len[i][j] = a[i] === b[j] ? len[i + 1][j + 1] + 1 : Math.max(len[i + 1][j], len[i][j + 1]);
  const out: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push([i++, j++]);
    } else if (len[i + 1][j] >= len[i][j + 1]) i++;
    else j++;
  }
  return out;
}

/** `a` and `b` in one list: common items once, the rest marked, in an order that keeps both. */
function merged<T>(a: readonly T[], b: readonly T[], key: (x: T) => string): { mark: DumpMark; item: T }[] {
  const pairs = common(a.map(key), b.map(key));
  const out: { mark: DumpMark; item: T }[] = [];
  let i = 0;
  let j = 0;
  for (const [pi, pj] of [...pairs, [a.length, b.length] as [number, number]]) {
    while (i < pi) out.push({ mark: '-', item: a[i++] });
    while (j < pj) out.push({ mark: '+', item: b[j++] });
    if (pi < a.length) out.push({ mark: ' ', item: a[pi] });
    i = pi + 1;
    j = pj + 1;
  }
  return out;
}

/** Header lines of a set or map: one line each, compared as text. */
function setHeader(s: InstalledSet): string[] {
  const lines = [`type ${s.type}`];
  const flags = declaredSetFlags({ interval: s.flags.includes('interval'), ...(s.timeout !== undefined ? { timeout: s.timeout } : {}) });
  const other = s.flags.filter((f) => f !== 'interval' && f !== 'timeout');
  if (flags || other.length) lines.push(`flags ${[flags, ...other].filter(Boolean).join(',')}`);
  if (s.timeout !== undefined) lines.push(`timeout ${s.timeout}s`);
  return lines;
}

/** A map's header; `typeofText` declares a key nft has no type name for (the kernel's read-back lacks it). */
const mapHeader = (m: InstalledMap, typeofText: string | undefined): string[] => [
  mapDeclaration(m.type, m.data, typeofText),
  ...(m.flags.length ? [`flags ${m.flags.join(',')}`] : []),
];

/** A block `kind name { header; elements = { … } }`, with what only one side has marked. */
function block(
  out: Line[],
  kind: string,
  name: string,
  mark: DumpMark,
  want: { header: string[]; elements: string[] } | undefined,
  have: { header: string[]; elements: string[] } | undefined,
): void {
  const only = (m: DumpMark, lines: string[]) => lines.map((text) => ({ mark: m, text }));
  out.push({ mark, text: `\t${kind} ${name} {` });
  const header = merged(want?.header ?? [], have?.header ?? [], (l) => l);
  out.push(...header.map((h) => ({ mark: mark === ' ' ? h.mark : mark, text: `\t\t${h.item}` })));
  const wantSet = new Set(want?.elements ?? []);
  const haveSet = new Set(have?.elements ?? []);
  const all = [...new Set([...(want?.elements ?? []), ...(have?.elements ?? [])])];
  if (all.length) {
    out.push({ mark, text: '\t\telements = {' });
    all.forEach((e, i) => {
      const m: DumpMark = mark !== ' ' ? mark : wantSet.has(e) && haveSet.has(e) ? ' ' : wantSet.has(e) ? '-' : '+';
      out.push({ mark: m, text: `\t\t\t${e}${i < all.length - 1 ? ',' : ''}` });
    });
    out.push({ mark, text: '\t\t}' });
  }
  out.push(...only(mark, ['\t}']));
}

function chainLines(
  out: Line[],
  name: string,
  mark: DumpMark,
  want: InstalledChain | undefined,
  have: InstalledChain | undefined,
  text: (comment: string) => string,
): void {
  out.push({ mark, text: `\tchain ${name} {` });
  const head = (c: InstalledChain | undefined) =>
    c?.base ? [`type ${c.base.type} hook ${c.base.hook} priority ${c.base.priority}; policy ${c.base.policy};`] : [];
  for (const h of merged(head(want), head(have), (l) => l)) out.push({ mark: mark === ' ' ? h.mark : mark, text: `\t\t${h.item}` });
  for (const r of merged(want?.rules ?? [], have?.rules ?? [], (x) => x.comment))
    out.push({ mark: mark === ' ' ? r.mark : mark, text: `\t\t${text(r.item.comment)}` });
  out.push({ mark, text: '\t}' });
}

/**
 * The table as nft syntax: felix's desired table, or with `kernel` (its table as read back; null
 * when the kernel has none) the kernel's, each line marked ` `, `-` (felix meant it, the kernel
 * lacks it) or `+` (the kernel has it, felix did not mean it). Elements are one per line, sorted.
 */
export function dumpTable(desired: NftTable, kernel?: InstalledTable | null): TableDump {
  const want = tableState(desired);
  // Rules by the comment felix writes on them, for their text.
  const exprs = new Map<string, string>();
  for (const c of desired.chains) for (const r of c.rules) exprs.set(ruleComment(r), r.expr);
  const ruleText = (comment: string): string => {
    const expr = exprs.get(comment);
    if (expr !== undefined) return `${expr} comment ${quote(comment, 'rule comment')}`;
    return comment ? `# a rule felix did not write, comment ${JSON.stringify(comment)}` : '# a rule without a comment, not felix’s';
  };
  const have: InstalledTable = kernel === undefined ? want : (kernel ?? { sets: new Map(), maps: new Map(), chains: new Map() });
  const out: Line[] = [];
  const absent = kernel === null;
  out.push({ mark: absent ? '-' : ' ', text: `table ${tableRef(desired)} {` });
  const names = <T>(a: ReadonlyMap<string, T>, b: ReadonlyMap<string, T>) => [...new Set([...a.keys(), ...b.keys()])];
  const side = (w: unknown, h: unknown): DumpMark => (absent ? '-' : w && h ? ' ' : w ? '-' : '+');
  for (const name of names(want.sets, have.sets)) {
    const w = want.sets.get(name);
    const h = have.sets.get(name);
    const view = (s: InstalledSet | undefined) => s && { header: setHeader(s), elements: [...s.elements].sort() };
    block(out, 'set', name, side(w, h), view(w), view(h));
  }
  for (const name of names(want.maps, have.maps)) {
    const w = want.maps.get(name);
    const h = have.maps.get(name);
    // The kernel's map is declared as felix's when their types agree: its typeof is not read back.
    const typeofText = (m: InstalledMap) => (w && m.type === w.type && m.data === w.data ? w.typeof : m.typeof);
    const view = (m: InstalledMap | undefined) =>
      m && { header: mapHeader(m, typeofText(m)), elements: [...m.elements].map(([k, v]) => `${k} : ${v}`).sort() };
    block(out, 'map', name, side(w, h), view(w), view(h));
  }
  for (const name of names(want.chains, have.chains)) {
    const w = want.chains.get(name);
    const h = have.chains.get(name);
    chainLines(out, name, side(w, h), w, h, ruleText);
  }
  out.push({ mark: absent ? '-' : ' ', text: '}' });
  const differs = out.some((l) => l.mark !== ' ');
  const text = kernel === undefined ? out.map((l) => `${l.text}\n`).join('') : out.map((l) => `${l.mark} ${l.text}\n`).join('');
  return { text, differs };
}
