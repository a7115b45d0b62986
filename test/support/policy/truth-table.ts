// A truth table of the probe matrix: for every (from pod, to pod, protocol/port), whether the
// connection is allowed. The reference fills one from the policies, the prober from packets;
// `formatComparison` prints both side by side as Cyclonus does (rows from, columns to, `.`
// allowed, `X` blocked) with a third grid marking each cell where they differ.
import { type Probe, probeKey } from './model.js';

export interface Difference {
  readonly from: string;
  readonly to: string;
  readonly probe: Probe;
  readonly expected: boolean | undefined;
  readonly measured: boolean | undefined;
}

export class TruthTable {
  private readonly cells = new Map<string, boolean>();

  /** `pods` are "namespace/name" keys, in the order rows and columns are printed. */
  constructor(
    readonly pods: readonly string[],
    readonly probes: readonly Probe[],
  ) {}

  private static key(from: string, to: string, probe: Probe): string {
    return `${from}>${to}>${probeKey(probe)}`;
  }

  set(from: string, to: string, probe: Probe, allowed: boolean): void {
    this.cells.set(TruthTable.key(from, to, probe), allowed);
  }

  get(from: string, to: string, probe: Probe): boolean | undefined {
    return this.cells.get(TruthTable.key(from, to, probe));
  }

  /** Every cell of `this` (expected) that `measured` does not match; a missing cell always differs. */
  differences(measured: TruthTable): Difference[] {
    const out: Difference[] = [];
    for (const probe of this.probes)
      for (const from of this.pods)
        for (const to of this.pods) {
          const expected = this.get(from, to, probe);
          const got = measured.get(from, to, probe);
          if (expected === undefined || got === undefined || expected !== got) out.push({ from, to, probe, expected, measured: got });
        }
    return out;
  }

  /** Cells allowed, per probe: a short summary for logs. */
  allowedCount(probe: Probe): number {
    let n = 0;
    for (const from of this.pods) for (const to of this.pods) if (this.get(from, to, probe)) n++;
    return n;
  }
}

const mark = (v: boolean | undefined): string => (v === undefined ? '?' : v ? '.' : 'X');

function grid(pods: readonly string[], cell: (from: string, to: string) => string): string[] {
  const w = Math.max(...pods.map((p) => p.length), 1);
  const lines = [`${'-'.padEnd(w)} ${pods.map((p) => p.padEnd(w)).join(' ')}`];
  for (const from of pods) lines.push(`${from.padEnd(w)} ${pods.map((to) => cell(from, to).padEnd(w)).join(' ')}`);
  return lines;
}

/** Expected and measured tables per probe, side by side, then the list of differing cells. */
export function formatComparison(expected: TruthTable, measured: TruthTable, title = ''): string {
  const out: string[] = [];
  if (title) out.push(title);
  const diffs = expected.differences(measured);
  for (const probe of expected.probes) {
    const e = grid(expected.pods, (f, t) => mark(expected.get(f, t, probe)));
    const m = grid(expected.pods, (f, t) => mark(measured.get(f, t, probe)));
    const d = grid(expected.pods, (f, t) => (expected.get(f, t, probe) === measured.get(f, t, probe) ? '.' : '*'));
    const width = e[0]!.length;
    // No "<text>: expected" in the text: mocha cuts an assertion message there.
    out.push('', `${`${probeKey(probe)} reference`.padEnd(width)}   ${'measured'.padEnd(width)}   differs`);
    for (let i = 0; i < e.length; i++) out.push(`${e[i]!.padEnd(width)}   ${m[i]!.padEnd(width)}   ${d[i]}`);
  }
  out.push('', diffs.length === 0 ? 'no differences' : `${diffs.length} cell(s) differ:`);
  for (const x of diffs.slice(0, 40))
    out.push(`  ${x.from} -> ${x.to} ${probeKey(x.probe)}: the reference says ${word(x.expected)}, measured ${word(x.measured)}`);
  if (diffs.length > 40) out.push(`  … and ${diffs.length - 40} more`);
  return out.join('\n');
}

const word = (v: boolean | undefined): string => (v === undefined ? 'nothing' : v ? 'allowed' : 'blocked');
