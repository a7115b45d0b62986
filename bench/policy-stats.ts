// Percentiles and the markdown tables the policy benchmark prints.

/** Nearest-rank percentile (p in 0..100) of the values; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

/**
 * What a p99 over n samples is (nearest rank): below 100 samples it is the slowest, one event
 * whose size is chance (one wait for a core on a loaded machine), not a percentile.
 */
export function p99Note(n: number): string {
  const fromTop = n - Math.max(1, Math.ceil(0.99 * n)) + 1;
  const which = fromTop === 1 ? 'the slowest' : `the ${ordinal(fromTop)} slowest`;
  return n < 100
    ? `p99 over ${n} samples is ${which}, one event: not a percentile (100 or more give one)`
    : `p99 over ${n} samples is ${which}`;
}

function ordinal(k: number): string {
  const teen = k % 100 >= 11 && k % 100 <= 13;
  const suffix = teen ? 'th' : (['th', 'st', 'nd', 'rd'][k % 10] ?? 'th');
  return `${k}${suffix}`;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

/** Milliseconds with a precision that suits their size. */
export function ms(v: number): string {
  if (Number.isNaN(v)) return '—';
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function ratio(a: number, b: number): string {
  if (!(b > 0) || Number.isNaN(a)) return '—';
  const r = a / b;
  return `${r >= 10 ? r.toFixed(0) : r.toFixed(1)}×`;
}

export const count = (n: number): string => (Number.isNaN(n) ? '—' : Math.round(n).toLocaleString('en-US'));

export function table(head: readonly string[], rows: readonly (readonly string[])[], rightFrom = 1): string {
  const align = head.map((_, i) => (i < rightFrom ? '---' : '---:'));
  return [head, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}
