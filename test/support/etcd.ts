// Real etcd servers for tests: free loopback ports, a temp data dir each, stopped by PID.
//
//   const etcd = await startEtcd();                 // one member
//   ... etcd.endpoints ...
//   await etcd.kill();  await etcd.restart();       // SIGKILL as a crash; same ports and data
//   await etcd.restart({ empty: true });            // comes back with an empty data dir
//   await etcd.stop();                              // SIGTERM then SIGKILL; removes the dir
//
//   const c = await startEtcdCluster(3);            // three members, one cluster
//   const l = await c.leader();  await c.kill(l);   // lose the leader
//   await c.restart(l);  await c.stop();
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bgp/session/free-port.js';

export interface EtcdMember {
  readonly name: string;
  /** The PID of the running server (undefined while killed or stopped). */
  readonly pid: number | undefined;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
}

export interface EtcdServer extends EtcdMember {
  readonly endpoints: string[];
  /** SIGKILL and wait for the process to exit. */
  kill(): Promise<void>;
  /** Start again on the same ports; with `empty`, on a wiped data dir (a store that lost everything). */
  restart(options?: { empty?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

export interface EtcdCluster {
  readonly endpoints: string[];
  readonly members: readonly EtcdMember[];
  /** The member every reachable member names as leader (bounded wait for an election). */
  leader(waitMs?: number): Promise<EtcdMember>;
  /** SIGKILL by PID, as a crash. */
  kill(member: EtcdMember): Promise<void>;
  /** Starts a killed member again on its ports and data dir; resolves when it is healthy. */
  restart(member: EtcdMember): Promise<void>;
  /** Stops every member by PID and removes the data dirs. */
  stop(): Promise<void>;
}

export interface EtcdOptions {
  /** Raft timings in ms (defaults 100 / 1000, etcd's own). */
  heartbeatMs?: number;
  electionMs?: number;
  /** How long to wait for the cluster to be healthy (default 20 s). */
  startWaitMs?: number;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running)
    if (p.pid !== undefined)
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
});

function exited(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((r) => p.once('exit', () => r()));
}

/** etcd's JSON gateway, bounded: the v3 API without a client library. */
async function gateway(clientUrl: string, path: string, body: unknown, waitMs = 1000): Promise<Record<string, unknown>> {
  const res = await fetch(`${clientUrl}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(waitMs),
  });
  if (!res.ok) throw new Error(`${clientUrl}${path}: HTTP ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  } catch {
    return false;
  }
}

class Member implements EtcdMember {
  proc: ChildProcess | undefined;
  log = '';
  constructor(
    readonly name: string,
    readonly clientPort: number,
    readonly peerPort: number,
    readonly dataDir: string,
  ) {}
  get pid(): number | undefined {
    return this.proc?.pid;
  }
  get clientUrl(): string {
    return `http://127.0.0.1:${this.clientPort}`;
  }
  get peerUrl(): string {
    return `http://127.0.0.1:${this.peerPort}`;
  }

  launch(initialCluster: string, token: string, options: EtcdOptions): void {
    const args = [
      '--name',
      this.name,
      '--data-dir',
      this.dataDir,
      '--listen-client-urls',
      this.clientUrl,
      '--advertise-client-urls',
      this.clientUrl,
      '--listen-peer-urls',
      this.peerUrl,
      '--initial-advertise-peer-urls',
      this.peerUrl,
      '--initial-cluster',
      initialCluster,
      '--initial-cluster-token',
      token,
      '--initial-cluster-state',
      'new',
      '--heartbeat-interval',
      String(options.heartbeatMs ?? 100),
      '--election-timeout',
      String(options.electionMs ?? 1000),
      '--logger',
      'zap',
      '--log-level',
      'warn',
    ];
    this.log = '';
    const p = spawn('etcd', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = p;
    running.add(p);
    p.once('exit', () => running.delete(p));
    const keep = (d: Buffer): void => {
      this.log = (this.log + d.toString()).slice(-4000);
    };
    p.stdout!.on('data', keep);
    p.stderr!.on('data', keep);
  }

  async kill(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = undefined;
    if (p.pid !== undefined && p.exitCode === null) process.kill(p.pid, 'SIGKILL');
    await exited(p);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (p && p.exitCode === null && p.pid !== undefined) {
      process.kill(p.pid, 'SIGTERM');
      const t = setTimeout(() => {
        if (p.exitCode === null && p.pid !== undefined) process.kill(p.pid, 'SIGKILL');
      }, 3000);
      await exited(p);
      clearTimeout(t);
    }
  }
}

async function waitHealthy(members: readonly Member[], waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (const m of members) {
    for (;;) {
      if (m.proc && m.proc.exitCode !== null) throw new Error(`etcd ${m.name} exited (${m.proc.exitCode}): ${m.log}`);
      if (await healthy(m.clientUrl)) break;
      if (Date.now() > deadline) throw new Error(`etcd ${m.name} (${m.clientUrl}) was not healthy within ${waitMs} ms: ${m.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Starts n members (ports picked free, retried if one was taken meanwhile). */
async function startMembers(n: number, options: EtcdOptions): Promise<{ dir: string; members: Member[]; relaunch: (m: Member) => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-etcd-'));
  const token = `podroute-${process.pid}-${randomUUID()}`;
  for (let attempt = 0; ; attempt++) {
    const members: Member[] = [];
    for (let i = 0; i < n; i++) {
      const dataDir = join(dir, `m${i}-${attempt}`);
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      members.push(new Member(`m${i}`, await freePort(), await freePort(), dataDir));
    }
    const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    const relaunch = (m: Member): void => m.launch(initialCluster, token, options);
    for (const m of members) relaunch(m);
    try {
      await waitHealthy(members, options.startWaitMs ?? 20_000);
      return { dir, members, relaunch };
    } catch (e) {
      await Promise.all(members.map((m) => m.kill()));
      if (attempt >= 3 || !/address already in use/i.test(String(e))) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
    }
  }
}

export async function startEtcd(options: EtcdOptions = {}): Promise<EtcdServer> {
  const { dir, members, relaunch } = await startMembers(1, options);
  const m = members[0]!;
  return {
    name: m.name,
    get pid() {
      return m.pid;
    },
    clientUrl: m.clientUrl,
    peerUrl: m.peerUrl,
    dataDir: m.dataDir,
    endpoints: [m.clientUrl],
    kill: () => m.kill(),
    async restart(o = {}) {
      await m.kill();
      if (o.empty) {
        rmSync(m.dataDir, { recursive: true, force: true });
        mkdirSync(m.dataDir, { recursive: true, mode: 0o700 });
      }
      await relaunchHealthy(m, relaunch, options.startWaitMs ?? 20_000);
    },
    async stop() {
      await m.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A killed server's ports may linger a moment: retry the start briefly. */
async function relaunchHealthy(m: Member, relaunch: (m: Member) => void, waitMs: number): Promise<void> {
  for (let i = 0; ; i++) {
    relaunch(m);
    try {
      await waitHealthy([m], waitMs);
      return;
    } catch (e) {
      await m.kill();
      if (i >= 20 || !/address already in use/i.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function startEtcdCluster(n = 3, options: EtcdOptions = {}): Promise<EtcdCluster> {
  const { dir, members, relaunch } = await startMembers(n, options);
  const own = (member: EtcdMember): Member => {
    const m = members.find((x) => x.name === member.name);
    if (!m) throw new Error(`${member.name} is not a member of this cluster`);
    return m;
  };
  return {
    endpoints: members.map((m) => m.clientUrl),
    members,
    async leader(waitMs = 15_000) {
      const deadline = Date.now() + waitMs;
      let last = '';
      for (;;) {
        // The leader's member id as each live member sees it, against each one's own id.
        const ids = new Map<string, Member>();
        const named = new Set<string>();
        for (const m of members) {
          if (!m.proc) continue;
          try {
            const s = await gateway(m.clientUrl, '/v3/maintenance/status', {});
            const header = s.header as { member_id?: string };
            if (header.member_id) ids.set(header.member_id, m);
            named.add(String(s.leader ?? '0'));
          } catch (e) {
            last = String(e);
          }
        }
        if (named.size === 1) {
          const l = ids.get([...named][0]!);
          if (l) return l;
        }
        if (Date.now() > deadline) throw new Error(`no single leader within ${waitMs} ms (named: ${[...named].join(',')}) ${last}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    kill: (member) => own(member).kill(),
    async restart(member) {
      const m = own(member);
      await m.kill();
      await relaunchHealthy(m, relaunch, options.startWaitMs ?? 20_000);
    },
    async stop() {
      await Promise.all(members.map((m) => m.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
