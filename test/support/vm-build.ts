// Compiled JavaScript for the kernel VM, where tsx is far too slow: dist/ (what the agents and
// podroute-cni run with PODROUTE_RUN=dist), built when stale, and a suite's scenario bundled with
// esbuild into dist/vm/ (its node_modules imports left to resolve there).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execCommand } from '../../lib/lab/system.js';
import { ensureDist } from './dist.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');

/** dist/ matching the sources under test: `npm run build` when a source is newer (the suite's set-up has already built it). */
export function buildDist(): Promise<void> {
  return ensureDist();
}

/** Builds dist/ and bundles `entry` (a TypeScript scenario) to dist/vm/`name`; returns the bundle's path. */
export async function buildForVm(entry: string, name: string): Promise<string> {
  await buildDist();
  const outfile = join(ROOT, 'dist', 'vm', name);
  const r = await execCommand(
    [
      join(ROOT, 'node_modules', '.bin', 'esbuild'),
      entry,
      '--bundle',
      '--platform=node',
      '--target=node20',
      '--format=esm',
      '--packages=external',
      `--outfile=${outfile}`,
      '--log-level=warning',
      "--banner:js=import { createRequire as vmRequire } from 'node:module'; const require = vmRequire(import.meta.url);",
    ],
    { timeoutMs: 120_000 },
  );
  if (r.code !== 0) throw new Error(`esbuild ${entry} failed: ${r.stderr}`);
  return outfile;
}
