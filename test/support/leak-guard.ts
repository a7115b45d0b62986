// Once every test has run, the process must be able to exit. mocha runs without
// --exit, so a timer, socket or child a test forgot keeps the run alive until CI's bound kills it,
// with nothing saying which. Here the run ends anyway, naming what was left.
import { writeSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';

// How long the leftovers get to close after the last hook: sockets and children in their last
// exit handshake are not leaks.
const GRACE_MS = 10_000;

interface Handle {
  constructor?: { name?: string };
  spawnargs?: string[];
  pid?: number;
  remoteAddress?: string;
  remotePort?: number;
  localAddress?: string;
  localPort?: number;
  _onTimeout?: () => void;
  _idleTimeout?: number;
  fd?: number;
  address?: () => unknown;
}

// Timers are not handles: the ones still pending are tracked here, with what they would call, so
// that a forgotten interval can be named. Wrapped once, for global and imported timers alike.
const pendingTimers = new Set<NodeJS.Timeout>();
function trackTimers(): void {
  const timers = createRequire(import.meta.url)('node:timers') as typeof import('node:timers');
  const { setTimeout: st, setInterval: si, clearTimeout: ct, clearInterval: ci } = timers;
  const setT = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const t = st(
      (...a: unknown[]) => {
        pendingTimers.delete(t);
        fn(...a);
      },
      ms,
      ...args,
    );
    (t as unknown as { what: unknown }).what = fn;
    pendingTimers.add(t);
    return t;
  }) as typeof setTimeout;
  const setI = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const t = si(fn, ms, ...args);
    (t as unknown as { what: unknown }).what = fn;
    pendingTimers.add(t);
    return t;
  }) as typeof setInterval;
  const clear = (orig: (t?: NodeJS.Timeout | string | number) => void) => (t?: NodeJS.Timeout | string | number) => {
    if (t && typeof t === 'object') pendingTimers.delete(t);
    orig(t);
  };
  Object.assign(timers, { setTimeout: setT, setInterval: setI, clearTimeout: clear(ct), clearInterval: clear(ci) });
  Object.assign(globalThis, { setTimeout: setT, setInterval: setI, clearTimeout: clear(ct), clearInterval: clear(ci) });
  syncBuiltinESMExports();
}
trackTimers();

function timerLeftovers(): string[] {
  return [...pendingTimers]
    .filter((t) => t.hasRef() && !(t as unknown as { _destroyed: boolean })._destroyed)
    .map((t) => {
      const x = t as unknown as { _idleTimeout: number; _repeat: number | null; what: unknown };
      return `${x._repeat ? 'interval' : 'timeout'} ${x._idleTimeout} ms: ${String(x.what).slice(0, 200).replace(/\s+/g, ' ')}`;
    });
}

// Node's own diagnostic list of what holds the loop (undocumented but stable since Node 0.x).
function activeHandles(): Handle[] {
  const p = process as unknown as { _getActiveHandles?: () => Handle[] };
  return p._getActiveHandles?.() ?? [];
}

function describe(h: Handle): string {
  const kind = h.constructor?.name ?? 'handle';
  if (h.spawnargs) return `${kind} pid ${h.pid}: ${h.spawnargs.join(' ').slice(0, 200)}`;
  if (kind === 'Timeout' && h._onTimeout)
    return `${kind} every/after ${h._idleTimeout} ms: ${String(h._onTimeout).slice(0, 200).replace(/\s+/g, ' ')}`;
  if (kind === 'Server' && typeof h.address === 'function') return `${kind} listening on ${JSON.stringify(h.address())}`;
  if (h.remoteAddress !== undefined || h.localAddress !== undefined)
    return `${kind} ${h.localAddress ?? ''}:${h.localPort ?? ''} -> ${h.remoteAddress ?? ''}:${h.remotePort ?? ''}`;
  return `${kind}${h.fd !== undefined ? ` fd ${h.fd}` : ''}`;
}

// stdio streams stay open for the life of the process; they hold nothing back.
function leftovers(): Handle[] {
  return activeHandles().filter((h) => h.fd === undefined || h.fd > 2);
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// A global teardown, not a root afterAll: it runs once the whole run has ended, after every
// root-level hook of the test files too (the lab engine's dockerd is stopped in one of those).
export function mochaGlobalTeardown(): void {
  setTimeout(() => {
    const left = leftovers();
    const timers = timerLeftovers();
    writeSync(2, `\nleak guard: the suite ended but something keeps the process alive: ${process.getActiveResourcesInfo().join(', ')}\n`);
    for (const h of left) writeSync(2, `  ${describe(h)}\n`);
    for (const t of timers) writeSync(2, `  ${t}\n`);
    writeSync(2, "leak guard: a test must stop what it starts (after/afterEach); ending the run, whose verdict is the tests'.\n");
    // A leaked child would outlive us and hold CI's output pipe open: end it by its PID.
    for (const h of left) if (h.spawnargs && h.pid) killQuietly(h.pid);
    // The exit code stays mocha's (its exit handler sets the failure count): a leak is named
    // and ended here, and mended in the test that made it.
    process.exit();
  }, GRACE_MS).unref();
}
