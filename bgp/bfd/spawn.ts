// Starting the BFD thread. Installed, the package runs compiled JavaScript and the thread loads
// thread.js beside this file. From the sources (a checkout, whose bins register tsx in the
// process rather than with --import), a Worker does not inherit that registration: a few lines
// of JavaScript register tsx in the thread first, then load thread.ts.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { BfdOptions } from './endpoint.js';
import type { ThreadData } from './messages.js';

const BOOT = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch((e) => setImmediate(() => { throw e; }));
`;

export function spawnBfdThread(options: BfdOptions, discards: Float64Array): Worker {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSources ? './thread.ts' : './thread.js', import.meta.url).href;
  const data: ThreadData = { options, discards, entry };
  if (!fromSources) return new Worker(new URL(entry), { workerData: data });
  let tsx: string;
  try {
    tsx = tsxApi();
  } catch (e) {
    throw new Error(`bfd: the BFD thread runs ${entry} from the sources and needs tsx to load it (${(e as Error).message})`);
  }
  return new Worker(BOOT, { eval: true, workerData: { ...data, tsx } });
}

/**
 * Where tsx's ESM API is. Found through its package.json: import.meta.resolve is not there when
 * the sources are loaded as CommonJS (mocha's require), and require.resolve gives the CommonJS build.
 */
function tsxApi(): string {
  const pkgPath = createRequire(import.meta.url).resolve('tsx/package.json');
  const api = (JSON.parse(readFileSync(pkgPath, 'utf8')) as { exports?: Record<string, { import?: { default?: string } | string }> })
    .exports?.['./esm/api']?.import;
  const file = typeof api === 'string' ? api : api?.default;
  if (file === undefined) throw new Error(`${pkgPath} exports no ./esm/api for import`);
  return pathToFileURL(join(dirname(pkgPath), file)).href;
}
