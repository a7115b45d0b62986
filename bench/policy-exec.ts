// Running a command inside one of the benchmark's network namespaces, with its input on stdin
// and a bound on how long it may take: how both sides of the policy benchmark reach the kernel
// (nft through felix's dataplane, ipset and iptables-restore here), so each pays the same
// process start and `nsenter`.
import { spawn, spawnSync } from 'node:child_process';

export interface RunResult {
  readonly stdout: string;
  readonly ms: number;
}

/** Runs `cmd args` in network namespace `netns`; throws with its stderr when it fails or overruns. */
export function runIn(netns: string, cmd: string, args: readonly string[], input = '', timeoutMs = 60_000): Promise<RunResult> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('nsenter', [`--net=/var/run/netns/${netns}`, cmd, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${cmd}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const ms = performance.now() - t0;
      if (code === 0 && !killed) resolve({ stdout: Buffer.concat(out).toString('utf8'), ms });
      else {
        const why = killed ? `killed after ${timeoutMs} ms` : `exit ${code}`;
        reject(new Error(`${cmd} ${args.join(' ')} (${why}): ${Buffer.concat(err).toString('utf8').trim().slice(0, 2000)}`));
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** The first line a tool prints for `--version` (or `-V`), for the report. */
export function versionOf(cmd: string, flag = '--version'): string {
  const r = spawnSync(cmd, [flag], { encoding: 'utf8', timeout: 10_000 });
  return (r.stdout || r.stderr || `${cmd}: not found`).split('\n')[0]!.trim();
}

/** Network namespaces this process made, deleted by name on the way out (and on SIGINT/SIGTERM). */
export class Namespaces {
  private readonly made = new Set<string>();

  constructor(private readonly tag: string) {}

  add(suffix: string): string {
    const name = `${this.tag}${process.pid}${suffix}`;
    const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8', timeout: 10_000 });
    if (r.status !== 0) throw new Error(`ip netns add ${name}: ${r.stderr.trim()}`);
    this.made.add(name);
    spawnSync('ip', ['-n', name, 'link', 'set', 'lo', 'up'], { timeout: 10_000 });
    return name;
  }

  delete(name: string): void {
    if (!this.made.delete(name)) return;
    spawnSync('ip', ['netns', 'del', name], { timeout: 10_000 });
  }

  deleteAll(): void {
    for (const name of [...this.made]) this.delete(name);
  }

  /** Deletes them all and exits 130 on SIGINT or SIGTERM: an interrupted benchmark leaves no namespace behind. */
  deleteOnSignal(): this {
    const onSignal = () => {
      this.deleteAll();
      process.exit(130);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    return this;
  }
}
