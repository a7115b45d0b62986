// The policy dataplane over the `nft` command, in the network namespace given (or the
// process's own). A transaction is one `nft -f -` run, which nft applies atomically: if any
// line fails, none of it takes effect. The table is read back with `nft -j list table`. Every
// command names this dataplane's table and nothing else: it creates, flushes and deletes only
// inside it, and never lists or deletes the ruleset.

import { spawn } from 'node:child_process';
import type { InstalledTable, NftApplyResult, NftDataplane, NftOp, RuleCounterRow } from './dataplane.js';
import { POLICY_TABLE } from './nft-model.js';
import { readCountersJson, readTableJson } from './nft-readback.js';
import { renderTransaction } from './nft-script.js';
import { checkName } from './table-state.js';

export interface NftablesDataplaneOptions {
  /** A network namespace: its name under /var/run/netns, or a path to it. Default: the process's own. */
  readonly netns?: string;
  /** Default POLICY_TABLE (`podroute`). */
  readonly table?: string;
  /** The nft binary. Default `nft` from PATH. */
  readonly nft?: string;
  /** Bound on one nft run; it is killed after. Default 60 s. */
  readonly timeoutMs?: number;
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export class NftablesDataplane implements NftDataplane {
  readonly family = 'inet' as const;
  readonly table: string;
  readonly description: string;
  private readonly netnsPath?: string;

  constructor(private readonly opts: NftablesDataplaneOptions = {}) {
    this.table = opts.table ?? POLICY_TABLE;
    checkName(this.table, 'table');
    if (opts.netns !== undefined) this.netnsPath = opts.netns.includes('/') ? opts.netns : `/var/run/netns/${opts.netns}`;
    this.description = `nftables dataplane (table inet ${this.table}${opts.netns ? `, netns ${opts.netns}` : ''})`;
  }

  private nft(args: readonly string[], input?: string): Promise<Run> {
    const nft = this.opts.nft ?? 'nft';
    const [cmd, argv] = this.netnsPath ? ['nsenter', [`--net=${this.netnsPath}`, nft, ...args]] : [nft, [...args]];
    const timeoutMs = this.opts.timeoutMs ?? 60_000;
    return new Promise((resolve) => {
      const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let failed = '';
      const timer = setTimeout(() => {
        failed = `killed after ${timeoutMs} ms`;
        child.kill('SIGKILL');
      }, timeoutMs);
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => {
        failed = `${cmd}: ${e.message}`;
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        const stderr = Buffer.concat(err).toString('utf8');
        resolve({
          code: failed ? 127 : (code ?? 1),
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: failed ? `${failed}\n${stderr}` : stderr,
        });
      });
      // nft may exit before reading all of a refused script; that is not an error of ours.
      child.stdin.on('error', () => undefined);
      child.stdin.end(input ?? '');
    });
  }

  private async list(terse: boolean): Promise<string | undefined> {
    const r = await this.nft(['-j', ...(terse ? ['-t'] : []), 'list', 'table', this.family, this.table]);
    if (r.code === 0) return r.stdout;
    if (/No such file or directory/.test(r.stderr)) return undefined;
    throw new Error(`nft list table ${this.family} ${this.table}: ${r.stderr.trim() || `exit ${r.code}`}`);
  }

  async read(): Promise<InstalledTable | undefined> {
    const json = await this.list(false);
    return json === undefined ? undefined : readTableJson(json, this.family, this.table);
  }

  async readCounters(): Promise<RuleCounterRow[]> {
    const json = await this.list(true);
    return json === undefined ? [] : readCountersJson(json, this.family, this.table);
  }

  async apply(ops: readonly NftOp[]): Promise<NftApplyResult> {
    let script: string;
    try {
      script = renderTransaction({ family: this.family, name: this.table }, ops);
    } catch (e) {
      return { ok: false, error: (e as Error).message, script: '' };
    }
    if (!ops.length) return { ok: true, script };
    const r = await this.nft(['-f', '-'], script);
    if (r.code === 0) return { ok: true, script };
    return { ok: false, error: explain(r.stderr, script) || `nft exited ${r.code}`, script };
  }

  close(): void {}
}

/**
 * nft's errors name a line of the script (`/dev/stdin:3:45-51: Error: …`): each becomes
 * `line 3 (add rule inet podroute fwd …): Error: …`, one line per operation.
 */
function explain(stderr: string, script: string): string {
  const lines = script.split('\n');
  const out: string[] = [];
  for (const l of stderr.split('\n')) {
    const m = /^[^:\s]*:(\d+):[\d-]+: (.*)$/.exec(l);
    if (m) {
      const text = lines[Number(m[1]) - 1] ?? '';
      out.push(`line ${m[1]} (${text.length > 160 ? `${text.slice(0, 157)}...` : text}): ${m[2]}`);
    } else if (/^(Error|Warning|netlink):/i.test(l) || /killed after|nsenter|ENOENT/.test(l)) out.push(l.trim());
  }
  return out.join('\n') || stderr.trim();
}
