// Two V8 heap snapshots of one process (bench/soak.ts --snapshot-at writes them), compared.
// V8 keeps an object's id across the snapshots of one process, so the objects of the second
// that the first did not have are those made in between that are still alive: under steady
// churn, what grows. They are listed by kind (constructor, closure, string, array, ...), most
// first, with the change of each kind's total beside; --retainers KIND[,KIND] prints a few paths from
// such new objects of that kind up towards the roots: who holds them.
//
//   npx tsx bench/soak-heapdiff.ts A.heapsnapshot B.heapsnapshot [--top 30] [--retainers KIND] [--depth 12]
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Heap {
  count: number;
  kindOf: (i: number) => string;
  size: (i: number) => number;
  /** The object's id: the same in every snapshot of one process while it lives. */
  id: (i: number) => number;
  /** For each node, the nodes that point at it, with the edge's name (weak edges left out). */
  retainers: () => Map<number, { from: number; edge: string }[]>;
}

function load(file: string): Heap {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const meta = s.snapshot.meta;
  const N = meta.node_fields.length;
  const E = meta.edge_fields.length;
  const nf = (f: string) => meta.node_fields.indexOf(f);
  const ef = (f: string) => meta.edge_fields.indexOf(f);
  const [fType, fName, fSize, fEdges, fId] = [nf('type'), nf('name'), nf('self_size'), nf('edge_count'), nf('id')];
  const [eType, eName, eTo] = [ef('type'), ef('name_or_index'), ef('to_node')];
  const types = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const count = s.nodes.length / N;
  const kindOf = (i: number): string => {
    const type = types[s.nodes[i * N + fType]!]!;
    const name = s.strings[s.nodes[i * N + fName]!]!;
    // Strings and numbers are grouped by kind: their text is not a type.
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string' || type === 'number') return `(${type})`;
    if (type === 'closure') return `closure ${name || '(anonymous)'}`;
    return `${type === 'object' ? '' : `(${type}) `}${name.length > 80 ? `${name.slice(0, 77)}...` : name}`;
  };
  const retainers = () => {
    const by = new Map<number, { from: number; edge: string }[]>();
    let e = 0;
    for (let i = 0; i < count; i++) {
      const n = s.nodes[i * N + fEdges]!;
      for (let k = 0; k < n; k++, e++) {
        const type = edgeTypes[s.edges[e * E + eType]!]!;
        if (type === 'weak') continue;
        const to = s.edges[e * E + eTo]! / N;
        const nameOrIndex = s.edges[e * E + eName]!;
        const edge = type === 'element' || type === 'hidden' ? `[${nameOrIndex}]` : (s.strings[nameOrIndex] ?? '?');
        let list = by.get(to);
        if (!list) by.set(to, (list = []));
        list.push({ from: i, edge });
      }
    }
    return by;
  };
  return { count, kindOf, size: (i) => s.nodes[i * N + fSize]!, id: (i) => s.nodes[i * N + fId]!, retainers };
}

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const files = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
if (files.length !== 2) throw new Error('usage: soak-heapdiff.ts A.heapsnapshot B.heapsnapshot [--top N] [--retainers KIND] [--depth N]');
const TOP = Number(option('--top') ?? 30);
const DEPTH = Number(option('--depth') ?? 12);
const RETAINERS = option('--retainers');

const first = load(files[0]!);
const second = load(files[1]!);
const before = new Set<number>();
const totals = new Map<string, { a: number; b: number; aBytes: number; bBytes: number }>();
const total = (k: string) => {
  let t = totals.get(k);
  if (!t) totals.set(k, (t = { a: 0, b: 0, aBytes: 0, bBytes: 0 }));
  return t;
};
for (let i = 0; i < first.count; i++) {
  before.add(first.id(i));
  const t = total(first.kindOf(i));
  t.a++;
  t.aBytes += first.size(i);
}
const fresh = new Map<string, { count: number; bytes: number; nodes: number[] }>();
for (let i = 0; i < second.count; i++) {
  const k = second.kindOf(i);
  const t = total(k);
  t.b++;
  t.bBytes += second.size(i);
  if (before.has(second.id(i))) continue;
  let f = fresh.get(k);
  if (!f) fresh.set(k, (f = { count: 0, bytes: 0, nodes: [] }));
  f.count++;
  f.bytes += second.size(i);
  if (f.nodes.length < 50) f.nodes.push(i);
}
const sum = (xs: Iterable<{ aBytes: number; bBytes: number }>) => {
  let a = 0;
  let b = 0;
  for (const x of xs) {
    a += x.aBytes;
    b += x.bBytes;
  }
  return [a, b] as const;
};
const [aBytes, bBytes] = sum(totals.values());
console.log(`heap: ${(aBytes / 1e6).toFixed(2)} MB → ${(bBytes / 1e6).toFixed(2)} MB`);
console.log("made between the two and still alive in the second, by kind (count, bytes; the kind's change in count and bytes):");
for (const [k, f] of [...fresh].sort((x, y) => y[1].count - x[1].count).slice(0, TOP)) {
  const t = totals.get(k)!;
  console.log(
    `  ${String(f.count).padStart(8)} ${String(f.bytes).padStart(10)}   ${String(t.b - t.a).padStart(8)} ${String(t.bBytes - t.aBytes).padStart(10)}  ${k}`,
  );
}

const by = RETAINERS ? second.retainers() : undefined;
for (const kind of RETAINERS?.split(',') ?? []) {
  const nodes = fresh.get(kind)?.nodes ?? [];
  console.log(`retainer paths of new objects of ${kind} (${nodes.length > 8 ? 'some' : nodes.length}):`);
  for (const start of nodes.filter((_, i) => i % 6 === 0).slice(0, 8)) {
    const path: string[] = [];
    const seen = new Set<number>([start]);
    let at = start;
    for (let depth = 0; depth < DEPTH; depth++) {
      const r = (by!.get(at) ?? []).find((x) => !seen.has(x.from));
      if (!r) break;
      path.push(`${second.kindOf(r.from)}.${r.edge}`);
      seen.add(r.from);
      at = r.from;
    }
    console.log(`  ${kind} ← ${path.join(' ← ')}`);
  }
}
