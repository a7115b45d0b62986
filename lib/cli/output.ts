// `-o json|yaml|wide` on every read: json and yaml print the data the daemon answered (stable,
// for scripts), wide adds columns to the table a person reads.
import { stringify as stringifyYaml } from 'yaml';
import type { OptionSpec } from './args.js';

export type Output = 'table' | 'wide' | 'json' | 'yaml';

export const OUTPUT: OptionSpec = {
  type: 'string',
  short: 'o',
  choices: ['json', 'yaml', 'wide', 'table'],
  help: 'json or yaml (for scripts), wide (more columns); default: a table',
};

export function outputOf(v: unknown): Output {
  return v === 'json' || v === 'yaml' || v === 'wide' ? v : 'table';
}

/** json or yaml text of a value: keys as the API gives them, two-space indented, a final newline. */
export function emit(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringifyYaml(value);
}

/** Rows under a header, columns padded to their widest cell. */
export function columns(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}
