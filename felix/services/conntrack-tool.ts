// The kernel's conntrack table through Debian's `conntrack` tool (package conntrack), one
// `conntrack -D` per filter, in the node's network namespace. The tool is optional: without it
// felix still programs services, stale UDP entries just live out their timeout, and the absence
// is reported once.
import { spawn } from 'node:child_process';
import type { ConntrackCleaner, ConntrackFilter } from './conntrack.js';

export interface ConntrackToolOptions {
  /** A network namespace: its name under /var/run/netns, or a path to it. Default: the process's own. */
  readonly netns?: string;
  /** The conntrack binary. Default `conntrack` from PATH. */
  readonly conntrack?: string;
  /** Bound on one run; it is killed after. Default 10 s. */
  readonly timeoutMs?: number;
  /** Told of a failure (the missing tool once). */
  readonly onError?: (message: string) => void;
}

/** The arguments of `conntrack` that delete what `f` names. */
export function conntrackDeleteArgs(f: ConntrackFilter): string[] {
  return [
    '-D',
    '-f',
    f.family === 4 ? 'ipv4' : 'ipv6',
    '-p',
    f.protocol,
    ...(f.origDst !== undefined ? ['--orig-dst', f.origDst] : []),
    '--orig-port-dst',
    String(f.origDstPort),
    '--reply-src',
    f.replySrc,
  ];
}

export class ConntrackTool implements ConntrackCleaner {
  /** Set once the tool was found missing: nothing is tried after. */
  missing = false;
  /** Entries deleted so far. */
  deleted = 0;

  constructor(private readonly opts: ConntrackToolOptions = {}) {}

  async clear(filters: readonly ConntrackFilter[]): Promise<number> {
    let n = 0;
    for (const f of filters) {
      if (this.missing) break;
      n += await this.run(conntrackDeleteArgs(f));
    }
    this.deleted += n;
    return n;
  }

  private run(args: readonly string[]): Promise<number> {
    const tool = this.opts.conntrack ?? 'conntrack';
    const ns = this.opts.netns;
    const [cmd, argv] =
      ns !== undefined ? ['nsenter', [`--net=${ns.includes('/') ? ns : `/var/run/netns/${ns}`}`, tool, ...args]] : [tool, [...args]];
    return new Promise((resolve) => {
      let out = '';
      let done = false;
      const finish = (n: number, error?: string) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (error !== undefined) this.opts.onError?.(error);
        resolve(n);
      };
      const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        finish(0, `conntrack ${args.join(' ')}: no answer in ${this.opts.timeoutMs ?? 10_000} ms`);
      }, this.opts.timeoutMs ?? 10_000);
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return this.toolMissing(finish, `${cmd} not found`);
        finish(0, `conntrack: ${e.message}`);
      });
      child.on('close', (code) => {
        // It exits 1 when no entry matched, yet says how many it deleted either way.
        const m = /(\d+) flow entr(?:y has|ies have) been deleted/.exec(out);
        if (m) return finish(Number(m[1]));
        if (code === 127 || /failed to execute|No such file/.test(out)) return this.toolMissing(finish, out.trim());
        finish(0, `conntrack ${args.join(' ')} exited ${code}: ${out.trim().slice(0, 300)}`);
      });
    });
  }

  private toolMissing(finish: (n: number, error?: string) => void, why: string): void {
    const first = !this.missing;
    this.missing = true;
    finish(0, first ? `conntrack tool unavailable (${why}): stale UDP entries to removed endpoints are left to time out` : undefined);
  }
}
