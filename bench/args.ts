// The benchmarks' one parser of numeric flags: `--name value`, its default when absent, and a
// clear error naming the flag when the value is not a number the flag takes.

export interface NumberArgRules {
  /** The least value taken (default 0). */
  readonly min?: number;
  /** Whole numbers only. */
  readonly integer?: boolean;
}

export function numberArg(name: string, d: number, rules: NumberArgRules = {}, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(name);
  if (i < 0) return d;
  const text = argv[i + 1];
  const v = Number(text);
  const min = rules.min ?? 0;
  if (text === undefined || text.trim() === '' || !Number.isFinite(v) || v < min || (rules.integer && !Number.isInteger(v)))
    throw new Error(`${name} takes ${rules.integer ? 'a whole number' : 'a number'} of ${min} or more, not ${JSON.stringify(text)}`);
  return v;
}
