// A real redis-server for tests: a free loopback port, a temp dir, stopped by PID.
//
//   const redis = await startRedis();            // or startRedis({ persist: true })
//   ... redis.url ...
//   await redis.kill();     // SIGKILL, as a crash
//   await redis.restart();  // same port, same dir (data kept only with persist)
//   await redis.stop();     // SIGTERM then SIGKILL; removes the dir
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

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
