// The CNI shim (cni/shim/podroute-cni, plain C) built for a suite: `npm install` builds it, and
// a checkout's tests build it again so that they run what the source says. Without a C
// compiler the suite is skipped, saying so.
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './node-agents.js';

export const SHIM = join(ROOT, 'cni/shim/podroute-cni');

/** Builds the shim, or skips the calling suite (call from a `before` hook with its context). */
export function buildShimOrSkip(ctx: Mocha.Context): void {
  const cc = process.env.CC || 'cc';
  if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).error) {
    console.log(`      skipped: no C compiler (${cc}) to build the shim`);
    ctx.skip();
  }
  execFileSync('sh', [join(ROOT, 'cni/shim/build.sh')], { stdio: 'inherit' });
}
