// The benchmarks that time felix in their own process (policy, policy-steps, services) run it
// with the Node.js options the agent runs with: those on the first line of bin/podroute.js,
// which starts `podroute node run` (none today: `--single-threaded-gc` was measured and not
// taken, BENCHMARKS.md, Policy). Figures of a process started otherwise would be of a process no
// node runs.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The options bin/podroute.js's first line (`#!/usr/bin/env -S node <options>`) gives Node.js. */
export function agentNodeOptions(): string[] {
  const first = readFileSync(new URL('../bin/podroute.js', import.meta.url), 'utf8').split('\n', 1)[0]!;
  const words = first.replace(/^#!/, '').trim().split(/\s+/);
  return words.slice(words.indexOf('node') + 1);
}

/**
 * Unless this process already runs with the agent's options, run this script again with them
 * (the loader's options kept) and exit as it does.
 */
export function runAsTheAgent(): void {
  const options = agentNodeOptions();
  if (options.every((o) => process.execArgv.includes(o))) return;
  const r = spawnSync(process.execPath, [...options, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
