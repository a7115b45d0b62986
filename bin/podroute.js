#!/usr/bin/env node
// The podroute CLI. In a checkout it runs the TypeScript sources through tsx, so nothing
// stale is ever executed; an installed package (sources not shipped) runs the compiled dist/.
import { existsSync } from 'node:fs';

const source = new URL('../lib/cli/main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/lib/cli/main.js');
}
