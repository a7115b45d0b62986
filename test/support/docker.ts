// A private Docker engine for tests: dockerd with no bridge and no iptables rules (the host is
// left as it was found), its own socket, stopped by PID. Its data-root is kept in a cache folder
// across test files and runs, so the lab images are built once and reused.
//
//   const got = await acquireDocker();          // in before(); refcounted within the process
//   if (!got.docker) { console.log(`skipped: ${got.reason}`); this.skip(); }
//   await ensureImages(got.docker);              // runs containerlab/build-images.sh once
//   ... docker -H got.docker.host run --network none podroute/node:latest ...
//   await releaseDocker();                       // in after(); the last release stops dockerd
//
// Concurrent test processes never share a data-root: each takes the first free slot
// (slot-N.lock, created exclusively, naming its PID), so each slot's images stay cached.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineAnswers } from '../../lib/lab/docker.js';

export interface TestDocker {
  /** For the docker CLI (`-H`) and DOCKER_HOST: unix:///…/docker.sock. */
  readonly host: string;
  readonly socket: string;
  readonly pid: number;
  readonly dataRoot: string;
}

export type Acquired = { docker: TestDocker; reason?: undefined } | { docker?: undefined; reason: string };

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MAX_SLOTS = 4;

/** Where the engines' data-roots live: $PODROUTE_TEST_DOCKER_DIR, else the user's cache. */
export const dockerCacheDir = (): string =>
  process.env.PODROUTE_TEST_DOCKER_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'podroute', 'test-docker');

interface Engine extends TestDocker {
  lock: string;
  execRoot: string;
  exited: Promise<void>;
  images?: Promise<BuildResult>;
}

let engine: Engine | undefined;
let starting: Promise<Acquired> | undefined;
let holders = 0;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function readPid(file: string): number {
  try {
    return Number(readFileSync(file, 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

function onPath(bin: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, bin)));
}

/** The first slot no live process holds; stale locks (dead PID) are taken over. */
function takeSlot(base: string): { slot: number; lock: string } | undefined {
  mkdirSync(base, { recursive: true });
  for (let slot = 0; slot < MAX_SLOTS; slot++) {
    const lock = join(base, `slot-${slot}.lock`);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(lock, 'wx');
        writeSync(fd, `${process.pid}\n`);
        closeSync(fd);
        return { slot, lock };
      } catch {
        const owner = readPid(lock);
        if (owner > 0 && alive(owner)) break;
        rmSync(lock, { force: true });
      }
    }
  }
  return undefined;
}

const tail = (file: string): string => {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    return '(no log)';
  }
};

async function start(): Promise<Acquired> {
  if (!onPath('dockerd')) return { reason: 'dockerd is not installed (apt-get install docker.io)' };
  if (!onPath('docker')) return { reason: 'no docker client on PATH (apt-get install docker.io)' };
  if (process.getuid?.() !== 0) return { reason: 'dockerd needs root' };
  const base = dockerCacheDir();
  const taken = takeSlot(base);
  if (!taken) return { reason: `all ${MAX_SLOTS} test engine slots in ${base} are held by live processes` };
  const dataRoot = join(base, `data-${taken.slot}`);
  // The exec-root holds containerd's and the shims' sockets: a short path, this process's own.
  const execRoot = `/tmp/prd-${process.pid}`;
  const socket = join(execRoot, 'docker.sock');
  const logFile = join(base, `dockerd-${taken.slot}.log`);
  mkdirSync(execRoot, { recursive: true });
  const argv = [
    '--bridge=none',
    '--iptables=false',
    '--ip6tables=false',
    '--data-root',
    dataRoot,
    '--exec-root',
    execRoot,
    '--pidfile',
    join(execRoot, 'dockerd.pid'),
    '-H',
    `unix://${socket}`,
  ];
  const out = openSync(logFile, 'w');
  const child = spawn('dockerd', argv, { detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  child.unref();
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const pid = child.pid;
  const giveUp = (reason: string): Acquired => {
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    for (const mount of mountsUnder([execRoot, dataRoot])) umount(mount);
    rmSync(execRoot, { recursive: true, force: true });
    rmSync(taken.lock, { force: true });
    return { reason };
  };
  if (pid === undefined) return giveUp('dockerd could not be started');
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + 30_000;
  const host = `unix://${socket}`;
  while (!(await engineAnswers(host))) {
    if (gone) return giveUp(`dockerd exited at start: ${tail(logFile)}`);
    if (Date.now() > deadline) return giveUp(`dockerd did not answer on ${socket} within 30 s: ${tail(logFile)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  engine = { host, socket, pid, dataRoot, lock: taken.lock, execRoot, exited };
  return { docker: engine };
}

/** The test engine, started on first use; `reason` says why there is none. */
export async function acquireDocker(): Promise<Acquired> {
  if (engine && alive(engine.pid)) {
    holders++;
    return { docker: engine };
  }
  starting ??= start().finally(() => {
    starting = undefined;
  });
  const got = await starting;
  if (got.docker) holders++;
  return got;
}

/** Drops one hold; the last stops dockerd by PID (SIGTERM, SIGKILL after 20 s). True when stopped. */
export async function releaseDocker(): Promise<boolean> {
  if (!engine) return false;
  holders = Math.max(0, holders - 1);
  if (holders > 0) return false;
  const e = engine;
  engine = undefined;
  await stop(e);
  return true;
}

async function stop(e: Engine): Promise<void> {
  if (alive(e.pid)) {
    process.kill(e.pid, 'SIGTERM');
    let bound: NodeJS.Timeout | undefined;
    const killed = await Promise.race([
      e.exited.then(() => false),
      new Promise<boolean>((r) => {
        bound = setTimeout(() => r(true), 20_000);
      }),
    ]);
    // The bound must not outlive a dockerd that exited in time: it would hold the run open.
    clearTimeout(bound);
    if (killed && alive(e.pid)) {
      process.kill(e.pid, 'SIGKILL');
      await e.exited;
      // A killed dockerd leaves its containerd behind: stop that one by its own pidfile.
      const containerd = readPid(join(e.execRoot, 'containerd', 'containerd.pid'));
      if (containerd > 0 && alive(containerd)) process.kill(containerd, 'SIGKILL');
    }
  }
  // dockerd leaves its network namespace's bind mount (exec-root/netns/default) behind.
  for (const mount of mountsUnder([e.execRoot, e.dataRoot])) umount(mount);
  rmSync(e.execRoot, { recursive: true, force: true });
  rmSync(e.lock, { force: true });
}

/** Mount points under any of `roots`, deepest first. */
function mountsUnder(roots: readonly string[]): string[] {
  const points = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[1] ?? '').replace(/\\040/g, ' '))
    .filter((m) => roots.some((r) => m === r || m.startsWith(`${r}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

function umount(point: string): void {
  try {
    execFileSync('umount', [point], { timeout: 10_000, stdio: 'ignore' });
  } catch {
    /* not mounted any more */
  }
}

// A test process that dies with the engine held still stops it: dockerd shuts down on SIGTERM.
process.once('exit', () => {
  if (engine && alive(engine.pid)) process.kill(engine.pid, 'SIGTERM');
});

export interface BuildResult {
  seconds: number;
  /** build-images.sh's account of what it built and skipped. */
  output: string;
}

/** Runs containerlab/build-images.sh against the engine (the debootstrap tarball is cached in the user's cache). */
export function buildImages(docker: TestDocker, args: readonly string[] = []): Promise<BuildResult> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    execFile(
      'sh',
      [join(repoRoot, 'containerlab', 'build-images.sh'), '--docker-host', docker.host, ...args],
      { timeout: 15 * 60_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (error) reject(new Error(`build-images.sh failed: ${output.trim().split('\n').slice(-15).join('\n')}`));
        else resolve({ seconds: (Date.now() - t0) / 1000, output });
      },
    );
  });
}

/** podroute/base, node, frr and redis (:latest) in the engine; built once per engine start. */
export function ensureImages(docker: TestDocker): Promise<BuildResult> {
  const e = engine && engine.pid === docker.pid ? engine : undefined;
  if (!e) return buildImages(docker);
  e.images ??= buildImages(docker).catch((error: unknown) => {
    e.images = undefined;
    throw error;
  });
  return e.images;
}
