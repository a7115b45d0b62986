// dist/ for the test run: the compiled tree an installed package runs, built from the sources
// when any of them is newer. The podroute and podroute-cni processes the suites start run it
// (PODROUTE_RUN=dist), rather than the sources through tsx, which transpiles the tree again in
// every process: seconds of CPU per start, where dist/ takes one build per run.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execCommand } from '../../lib/lab/system.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');
/** The build's last output: esbuild bundles it from tsc's, so it is written only once both succeeded. */
const LAST_OUTPUT = join(ROOT, 'dist/cni.js');
/** Files that change what the build makes besides the sources it compiles. */
const BUILD_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json'];
// A build takes ten seconds of CPU; a shared machine under load can stretch that to minutes.
const BUILD_BOUND_MS = 600_000;
const LOCK = join(ROOT, 'node_modules/.cache/podroute-dist.lock');

/** What `npm run build` compiles: tsconfig.build.json's include, TypeScript only. */
function sources(): string[] {
  const { include } = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };
  const out: string[] = [];
  const walk = (path: string): void => {
    if (!statSync(path).isDirectory()) {
      if (path.endsWith('.ts')) out.push(path);
      return;
    }
    for (const e of readdirSync(path, { withFileTypes: true })) {
      // native/build holds the addons node-gyp made, not sources; dot folders are tools' caches.
      if (e.name === 'node_modules' || e.name === 'build' || e.name.startsWith('.')) continue;
      if (e.isDirectory()) walk(join(path, e.name));
      else if (e.name.endsWith('.ts')) out.push(join(path, e.name));
    }
  };
  for (const entry of include) if (existsSync(join(ROOT, entry))) walk(join(ROOT, entry));
  return out;
}

/** Why dist/ does not match the sources (missing, or the first file found newer), or undefined when it does. */
export function distStaleness(): string | undefined {
  if (!existsSync(LAST_OUTPUT)) return 'dist/ is not built';
  const built = statSync(LAST_OUTPUT).mtimeMs;
  for (const file of [...BUILD_FILES.map((f) => join(ROOT, f)), ...sources()])
    if (statSync(file).mtimeMs > built) return `${relative(ROOT, file)} is newer than dist/`;
  return undefined;
}

let ensured: Promise<void> | undefined;

/** Builds dist/ when it is stale, once per process; waits for another run's build of this checkout. */
export function ensureDist(): Promise<void> {
  ensured ??= build().catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

async function build(): Promise<void> {
  if (distStaleness() === undefined) return;
  await underLock(async () => {
    const why = distStaleness();
    if (why === undefined) return; // another run built it while this one waited
    process.stderr.write(`test run: npm run build (${why})\n`);
    const t0 = performance.now();
    const r = await execCommand(['npm', '--prefix', ROOT, 'run', 'build'], { timeoutMs: BUILD_BOUND_MS });
    if (r.code !== 0) throw new Error(`npm run build failed (${r.code}): ${(r.stderr || r.stdout).slice(-3000)}`);
    const still = distStaleness();
    if (still !== undefined) throw new Error(`npm run build succeeded, yet ${still}`);
    process.stderr.write(`test run: dist/ built in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  });
}

/** Runs `fn` holding the checkout's build lock (a folder: mkdir either makes it or fails), one build at a time. */
async function underLock(fn: () => Promise<void>): Promise<void> {
  mkdirSync(join(LOCK, '..'), { recursive: true });
  const deadline = Date.now() + BUILD_BOUND_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const since = statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs;
      if (since === undefined) continue; // released between the two calls
      // A lock older than any build's bound was left by a run that was killed.
      if (Date.now() - since > BUILD_BOUND_MS) rmSync(LOCK, { recursive: true, force: true });
      else if (Date.now() > deadline)
        throw new Error(`dist/ is being built by another test run (${LOCK}) for longer than ${BUILD_BOUND_MS / 1000} s`);
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    await fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

let checked = false;

/**
 * Throws when the bins would run a stale dist/ (PODROUTE_RUN=dist and a source newer): a test
 * would otherwise pass or fail on code that is no longer there. Called before a helper starts
 * podroute or podroute-cni; the check reads the tree once per process.
 */
export function assertDistCurrent(): void {
  if (checked || process.env.PODROUTE_RUN !== 'dist') return;
  const why = distStaleness();
  if (why !== undefined)
    throw new Error(
      `PODROUTE_RUN=dist runs dist/, but ${why}: run \`npm run build\`, or give mocha \`--require test/support/run-dist.ts\`, which builds it when stale`,
    );
  checked = true;
}
