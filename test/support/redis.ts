// A real redis-server for tests: a free loopback port, a temp dir, stopped by PID.
//
//   const redis = await startRedis();            // or startRedis({ persist: true })
//   ... redis.url ...
//   await redis.kill();     // SIGKILL, as a crash
//   await redis.restart();  // same port, same dir (data kept only with persist)
//   await redis.stop();     // SIGTERM then SIGKILL; removes the dir
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bgp/session/free-port.js';

export interface RedisServerOptions {
  /** Keep data across kill/restart: append-only file, fsync on every write. */
  persist?: boolean;
  /** Use this port instead of a free one. */
  port?: number;
  /** Extra redis-server arguments, e.g. ['--maxmemory', '10mb']. */
  args?: string[];
}

export interface RedisServer {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** The PID of the running server (undefined while stopped). */
  readonly pid: number | undefined;
  /** SIGKILL and wait for the process to exit. */
  kill(): Promise<void>;
  /** Start again on the same port and dir; resolves when it answers PING. */
  restart(): Promise<void>;
  /** SIGTERM (SIGKILL after 3 s), then remove the temp dir. */
  stop(): Promise<void>;
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

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let buf = '';
    s.setTimeout(500, () => {
      s.destroy();
      resolve(false);
    });
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) {
        s.destroy();
        resolve(buf.startsWith('+PONG'));
      }
    });
    s.on('error', () => resolve(false));
  });
}

function exited(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((r) => p.once('exit', () => r()));
}

export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-redis-'));
  let port = options.port ?? (await freePort());
  let proc: ChildProcess | undefined;
  let log = '';

  const launch = async (): Promise<void> => {
    const args = [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      options.persist ? 'yes' : 'no',
      '--appendfsync',
      'always',
      '--daemonize',
      'no',
      '--protected-mode',
      'yes',
      '--logfile',
      '',
      ...(options.args ?? []),
    ];
    const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = p;
    running.add(p);
    p.once('exit', () => running.delete(p));
    p.stdout!.on('data', (d: Buffer) => {
      log = (log + d.toString()).slice(-4000);
    });
    p.stderr!.on('data', (d: Buffer) => {
      log = (log + d.toString()).slice(-4000);
    });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (p.exitCode !== null) throw new Error(`redis-server exited (${p.exitCode}) on port ${port}: ${log}`);
      if (await ping(port)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    p.kill('SIGKILL');
    throw new Error(`redis-server did not answer PING on port ${port} within 10 s: ${log}`);
  };

  // A free port can be taken between our probe and redis's bind: try a few.
  for (let attempt = 0; ; attempt++) {
    try {
      await launch();
      break;
    } catch (e) {
      if (options.port !== undefined || attempt >= 4 || !/Address already in use/.test(String(e))) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
      port = await freePort();
    }
  }

  const kill = async (): Promise<void> => {
    const p = proc;
    if (!p) return;
    proc = undefined;
    if (p.pid !== undefined && p.exitCode === null) process.kill(p.pid, 'SIGKILL');
    await exited(p);
  };

  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    get url() {
      return `redis://127.0.0.1:${port}`;
    },
    dir,
    get pid() {
      return proc?.pid;
    },
    kill,
    async restart() {
      if (proc) await kill();
      // The old socket may linger for a moment after a kill; retry the bind briefly.
      for (let i = 0; ; i++) {
        try {
          await launch();
          return;
        } catch (e) {
          if (i >= 20 || !/Address already in use/.test(String(e))) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
    async stop() {
      const p = proc;
      proc = undefined;
      if (p && p.exitCode === null && p.pid !== undefined) {
        process.kill(p.pid, 'SIGTERM');
        const t = setTimeout(() => {
          if (p.exitCode === null && p.pid !== undefined) process.kill(p.pid, 'SIGKILL');
        }, 3000);
        await exited(p);
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * In a describe block: one redis-server for the block (started before, stopped after), and a
 * name for each store opened on it, so every test starts from an empty store on the shared server.
 */
export function sharedRedis(tag: string): { url: () => string; freshName: () => string } {
  let redis: RedisServer | undefined;
  let n = 0;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  return {
    url: () => {
      if (!redis) throw new Error('sharedRedis: the server is not up yet (use it inside tests or hooks)');
      return redis.url;
    },
    freshName: () => `${tag}${process.pid}-${n++}`,
  };
}

export interface SentinelGroup {
  /** The master group name the sentinels watch. */
  readonly name: string;
  /** The two data servers; which one is primary changes with failovers (see primaryPort). */
  readonly servers: readonly RedisServer[];
  /** The three sentinels, as { host, port } for the datastore's `sentinels` option. */
  readonly sentinels: readonly { host: string; port: number }[];
  /** The PIDs of the sentinel processes (undefined once stopped). */
  readonly sentinelPids: readonly (number | undefined)[];
  /** The port the sentinels currently name as primary. */
  primaryPort(): Promise<number>;
  /** The server that is the primary now. */
  primary(): Promise<RedisServer>;
  /** Waits (bounded) until every sentinel names the same primary, other than `port`; returns it. */
  waitForFailover(port: number, waitMs?: number): Promise<number>;
  /**
   * Starts a killed server again and makes it a replica of the current primary (REPLICAOF, as
   * an operator or its restart script would), waiting (bounded) until it has synced.
   */
  rejoin(server: RedisServer, waitMs?: number): Promise<void>;
  /** Stops the sentinels, then the servers, by PID; removes their dirs. */
  stop(): Promise<void>;
}

/** One RESP command over a fresh connection (bounded): for asking sentinels without a client library. */
function ask(port: number, words: string[], waitMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let buf = '';
    const t = setTimeout(() => {
      s.destroy();
      reject(new Error(`no reply from 127.0.0.1:${port} to ${words.join(' ')} within ${waitMs} ms`));
    }, waitMs);
    s.on('connect', () => s.write(`*${words.length}\r\n${words.map((w) => `$${Buffer.byteLength(w)}\r\n${w}\r\n`).join('')}`));
    s.on('data', (d) => {
      buf += d.toString();
      if (replyComplete(buf)) {
        clearTimeout(t);
        s.destroy();
        resolve(buf);
      }
    });
    s.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

/** Enough RESP for the replies used here: a line, a bulk string, or an array of bulk strings. */
function replyComplete(buf: string): boolean {
  const bulkEnd = (at: number): number => {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return -1;
    const len = Number(buf.slice(at + 1, eol));
    if (len < 0) return eol + 2;
    const end = eol + 2 + len + 2;
    return Buffer.byteLength(buf) >= end ? end : -1;
  };
  if (buf.startsWith('$')) return bulkEnd(0) >= 0;
  if (buf.startsWith('*')) {
    const eol = buf.indexOf('\r\n');
    if (eol < 0) return false;
    let at = eol + 2;
    for (let n = Number(buf.slice(1, eol)); n > 0; n--) {
      at = bulkEnd(at);
      if (at < 0) return false;
    }
    return true;
  }
  return buf.includes('\r\n');
}

/**
 * A primary, a replica (`--replicaof`) and three sentinels (quorum 2) on loopback, with short
 * timings so a failover takes a few seconds: down-after 2 s (1 s saw a loaded
 * machine fail over twice), failover-timeout 10 s. Everything
 * is stopped by PID; every wait is bounded.
 */
export async function startSentinelGroup(options: { persist?: boolean } = {}): Promise<SentinelGroup> {
  const name = 'podroute';
  // A full sync would otherwise wait 5 s for more replicas to share one diskless transfer.
  const args = ['--repl-diskless-sync-delay', '0'];
  const primary = await startRedis({ persist: options.persist, args });
  const replica = await startRedis({ persist: options.persist, args: [...args, '--replicaof', '127.0.0.1', String(primary.port)] });
  const servers = [primary, replica];
  const procs: ChildProcess[] = [];
  const ports: number[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'podroute-sentinel-'));
  try {
    // The replica must have synced before the sentinels start, or a failover could find none eligible.
    const deadline = Date.now() + 10_000;
    while (!(await ask(replica.port, ['INFO', 'replication']).catch(() => '')).includes('master_link_status:up')) {
      if (Date.now() > deadline) throw new Error('the replica did not sync with the primary within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const conf = join(dir, `sentinel-${i}.conf`);
      // Sentinel rewrites its config file (it records what it learns), so each gets its own.
      writeFileSync(
        conf,
        [
          'bind 127.0.0.1',
          `port ${port}`,
          `dir ${dir}`,
          'logfile ""',
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
          `sentinel down-after-milliseconds ${name} 2000`,
          `sentinel failover-timeout ${name} 10000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const p = spawn('redis-sentinel', [conf], { stdio: 'ignore' });
      procs.push(p);
      running.add(p);
      p.once('exit', () => running.delete(p));
      ports.push(port);
    }
    for (const port of ports) {
      const deadline = Date.now() + 10_000;
      while (!(await ping(port))) {
        if (Date.now() > deadline) throw new Error(`redis-sentinel on port ${port} did not answer PING within 10 s`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  } catch (e) {
    for (const p of procs) if (p.pid !== undefined && p.exitCode === null) process.kill(p.pid, 'SIGKILL');
    await Promise.all(procs.map(exited));
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  /** The primary's port as the sentinel on `port` names it, or undefined when it does not answer. */
  const namedBy = async (port: number): Promise<number | undefined> => {
    const r = await ask(port, ['SENTINEL', 'get-master-addr-by-name', name]).catch(() => '');
    const m = /^\*2\r\n\$\d+\r\n[^\r]+\r\n\$\d+\r\n(\d+)\r\n/.exec(r);
    return m ? Number(m[1]) : undefined;
  };
  const primaryPort = async (): Promise<number> => {
    // Ask each sentinel until one answers: one of them may be the thing that is down.
    for (const port of ports) {
      const named = await namedBy(port);
      if (named !== undefined) return named;
    }
    throw new Error('no sentinel named a primary');
  };
  return {
    name,
    servers,
    sentinels: ports.map((port) => ({ host: '127.0.0.1', port })),
    get sentinelPids() {
      return procs.map((p) => (p.exitCode === null ? p.pid : undefined));
    },
    primaryPort,
    async primary() {
      const port = await primaryPort();
      const s = servers.find((x) => x.port === port);
      if (!s) throw new Error(`the sentinels name 127.0.0.1:${port}, which is not one of ours`);
      return s;
    },
    async waitForFailover(port, waitMs = 20_000) {
      const deadline = Date.now() + waitMs;
      for (;;) {
        // Every sentinel, not the first to answer: one still naming the old primary would send a
        // client to it once rejoin restarts it, empty and a primary until REPLICAOF.
        const named = await Promise.all(ports.map(namedBy));
        const now = named[0];
        if (now !== undefined && now !== port && named.every((n) => n === now)) return now;
        if (Date.now() > deadline)
          throw new Error(`the sentinels did not all name a new primary within ${waitMs} ms (${named.join(', ')})`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async rejoin(server, waitMs = 15_000) {
      await server.restart();
      const port = await primaryPort();
      if (port === server.port) throw new Error('rejoin: the sentinels still name this server primary');
      await ask(server.port, ['REPLICAOF', '127.0.0.1', String(port)]);
      const deadline = Date.now() + waitMs;
      for (;;) {
        const info = await ask(server.port, ['INFO', 'replication']).catch((e: unknown) => String(e));
        if (info.includes('master_link_status:up')) break;
        if (Date.now() > deadline) throw new Error(`the rejoined server did not sync within ${waitMs} ms: ${info}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      for (const p of procs) if (p.pid !== undefined && p.exitCode === null) process.kill(p.pid, 'SIGKILL');
      await Promise.all(procs.map(exited));
      await Promise.all(servers.map((s) => s.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
