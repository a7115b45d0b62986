// Compiled JavaScript for the kernel VM, where tsx is far too slow: `npm run build` (dist/, what
// the agents and podroute-cni run with PODROUTE_RUN=dist) once per test run, and a suite's
// scenario bundled with esbuild into dist/vm/ (its node_modules imports left to resolve there).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execCommand } from '../../lib/lab/system.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');
let built: Promise<void> | undefined;

/** `npm run build`, once per process: dist/ then matches the sources under test. */
export function buildDist(): Promise<void> {
  built ??= execCommand(['npm', '--prefix', ROOT, 'run', 'build'], { timeoutMs: 600_000 }).then((r) => {
    if (r.code !== 0) {
      built = undefined;
      throw new Error(`npm run build failed (${r.code}): ${(r.stderr || r.stdout).slice(-3000)}`);
    }
  });
  return built;
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
