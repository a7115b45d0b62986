// The installed package's version, for `podroute --version` and `podroute-cni --version`.
// Found by walking up from this module to podroute's package.json, since the module sits at a
// different depth in a checkout (lib/cni), in dist/lib/cni and in the bundled dist/cni.js.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageVersion(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'podroute' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      /* no package.json here: look one folder up */
    }
    const up = dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}
