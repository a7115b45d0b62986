// Which code a podroute bin runs. A checkout has the TypeScript sources: they run through tsx
// (a dev dependency), so an edit is never shadowed by a dist/ that an earlier build or
// `npm pack` left behind. An installed package ships no sources and runs the compiled dist/.
// PODROUTE_RUN=dist makes a checkout run dist/ too (after `npm run build`), as an installed
// package would: benchmarks of the shipped code use it.
import { existsSync } from 'node:fs';

export async function load(source, compiled) {
  const src = new URL(source, import.meta.url);
  const dist = new URL(compiled, import.meta.url);
  if (process.env.PODROUTE_RUN !== 'dist' && existsSync(src)) {
    const tsx = await import('tsx/esm/api').catch(() => undefined);
    if (tsx) {
      tsx.register();
      return import(src.href);
    }
  }
  if (!existsSync(dist)) {
    process.stderr.write(`podroute: ${dist.pathname} is missing: run \`npm run build\` (or \`npm ci\` to run the sources through tsx)\n`);
    process.exit(1);
  }
  return import(dist.href);
}
