// Go-style durations as Calico's resources write them ("120s", "2m", "1h30m"): one reader for
// the validators and the agent.

/** A duration in whole seconds (the text is checked by the validator first). */
export function durationSeconds(d: string): number {
  const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let total = 0;
  for (const m of d.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) total += Number(m[1]) * unit[m[2]!]!;
  return Math.round(total);
}
