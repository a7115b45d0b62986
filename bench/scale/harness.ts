// What both scale runners share: the tester process, a sampler of the measured process's CPU
// and memory from /proc (the figures least disturbed by others' load on the machine), the
// machine's load, and cleanup of everything started, by PID.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatIpv4Number } from '../../ip/index.js';
import type { TesterCommand, TesterProgress } from './tester.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const now = () => performance.timeOrigin + performance.now();

const started = new Set<ChildProcess>();
const dirs = new Set<string>();
function cleanup(): void {
  for (const p of started) if (p.pid !== undefined && p.exitCode === null) killTree(p.pid, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
process.once('exit', cleanup);
for (const s of ['SIGINT', 'SIGTERM'] as const)
  process.once(s, () => {
    cleanup();
    process.exit(130);
  });

function killTree(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone */
  }
}

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(d);
  return d;
}

export function removeDir(d: string): void {
  rmSync(d, { recursive: true, force: true });
  dirs.delete(d);
}

/** Spawns a process we own; its stderr's tail is kept for error messages. */
export function start(argv: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess & { tail(): string } {
  const p = spawn(argv[0]!, argv.slice(1), {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(p);
  let tail = '';
  const keep = (c: Buffer) => (tail = (tail + c.toString('utf8')).slice(-4000));
  p.stdout!.on('data', keep);
  p.stderr!.on('data', keep);
  return Object.assign(p, { tail: () => tail });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
export async function stop(p: ChildProcess, graceMs = 5000): Promise<void> {
  if (p.pid === undefined || p.exitCode !== null || p.signalCode !== null) {
    started.delete(p);
    return;
  }
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  killTree(p.pid, 'SIGTERM');
  const t = setTimeout(() => killTree(p.pid!, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
  started.delete(p);
}

export function listening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface ProcSample {
  /** CPU seconds, user + system. */
  cpu: number;
  rss: number;
  /** VmHWM: the peak resident set so far. */
  peak: number;
}

export function sample(pids: readonly number[]): ProcSample {
  const s = { cpu: 0, rss: 0, peak: 0 };
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      s.rss += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      s.peak += Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      s.cpu += (Number(f[11]) + Number(f[12])) / 100;
    } catch {
      /* exited */
    }
  }
  return s;
}

/** Waits until the processes have used under `cpu` seconds in each of two `windowMs` windows. */
export async function quiet(pids: readonly number[], timeoutMs: number, windowMs = 1000, cpu = 0.03): Promise<ProcSample> {
  const deadline = Date.now() + timeoutMs;
  let last = sample(pids);
  let calm = 0;
  while (Date.now() < deadline && calm < 2) {
    await new Promise((r) => setTimeout(r, windowMs));
    const s = sample(pids);
    calm = s.cpu - last.cpu < cpu ? calm + 1 : 0;
    last = s;
  }
  return last;
}

export function load(): string {
  return loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
}

export const mb = (octets: number) => octets / 2 ** 20;

/** The tester process and the last progress it reported. */
export class Tester {
  readonly process: ChildProcess;
  progress: TesterProgress | undefined;
  private waiting: ((m: { type: string; message?: string }) => void)[] = [];

  constructor() {
    this.process = fork(join(ROOT, 'bench/scale/tester.ts'), [], {
      execArgv: ['--import', 'tsx', '--max-old-space-size=4096'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    started.add(this.process);
    this.process.on('message', (m: { type: string; message?: string }) => {
      if (m.type === 'progress') this.progress = m as TesterProgress;
      else this.waiting.shift()?.(m);
    });
  }

  get pid(): number {
    return this.process.pid!;
  }

  call(cmd: TesterCommand): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push((m) => (m.type === 'error' ? reject(new Error(`tester: ${m.message}`)) : resolve()));
      this.process.send(cmd);
    });
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null && this.process.connected) await this.call({ type: 'stop' }).catch(() => undefined);
    await stop(this.process, 3000);
  }
}

/** Client i's /24, split in four /26 blocks: 10.64.0.0/10 upward. */
export function blocksOf(i: number, base = 0x0a400000): string[] {
  const a = (base + i * 256) >>> 0;
  return [0, 64, 128, 192].map((o) => `${formatIpv4Number(a + o)}/26`);
}

/** The i-th loopback address of a /16 under 127.0.0.0/8 (second octet `second`), from .0.1 on. */
export function loopback(second: number, i: number): string {
  const n = i + 1;
  return `127.${second}.${n >> 8}.${n & 255}`;
}

/**
 * Waits until the process's first .cpuprofile in `dir` is whole (bench/speaker/cpu-profile.mjs
 * writes it in one synchronous call, so a file that parses is complete), at most `ms`. A process
 * stopped by SIGTERM writes none: send it SIGHUP first.
 */
export async function profileWritten(dir: string, pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  const name = `bgpd-${pid}-0.cpuprofile`;
  while (Date.now() < deadline) {
    if (readdirSync(dir).includes(name)) {
      try {
        JSON.parse(readFileSync(join(dir, name), 'utf8'));
        return;
      } catch {
        // Still being written.
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  process.stderr.write(`  no whole ${name} in ${dir} after ${ms / 1000} s: the profile may be cut short\n`);
}
