// The host operations the lab runner needs: commands with a deadline, daemons started
// detached (so they outlive `podroute lab up`), and processes identified by PID and start time
// (so `down` never signals a recycled PID that now belongs to someone else).
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

export function execCommand(
  argv: readonly string[],
  options: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = execFile(
      argv[0]!,
      argv.slice(1),
      {
        timeout: options.timeoutMs ?? 30_000,
        maxBuffer: 64 * 1024 * 1024,
        env: options.env ?? process.env,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 127) : 0;
        resolve({ stdout, stderr: (error && (error as { killed?: boolean }).killed ? '(timed out) ' : '') + stderr, code });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Runs a command; a non-zero exit throws with the command and what it said. */
export async function run(
  argv: readonly string[],
  options: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const r = await execCommand(argv, options);
  if (r.code !== 0) throw new Error(`\`${argv.join(' ')}\` exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

/** Whether an interface of that name exists, in the host or in namespace `ns`. */
export async function linkExists(name: string, ns?: string): Promise<boolean> {
  return (await execCommand(['ip', ...(ns ? ['-n', ns] : []), 'link', 'show', 'dev', name])).code === 0;
}

export async function listNetns(): Promise<Set<string>> {
  const out = await run(['ip', 'netns', 'list']);
  return new Set(
    out
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[0]!)
      .filter(Boolean),
  );
}

export async function netnsPids(ns: string): Promise<number[]> {
  const r = await execCommand(['ip', 'netns', 'pids', ns]);
  return r.stdout.split(/\s+/).filter(Boolean).map(Number);
}

/** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot. */
export function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export interface Started {
  pid: number;
  startTime: string;
}

/** Starts a daemon in its own session, stdout and stderr to `logFile`; it outlives us. */
export function startDetached(argv: readonly string[], logFile: string, env: NodeJS.ProcessEnv, cwd?: string): Started {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', fd, fd], env, cwd });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${argv.join(' ')}`);
    return { pid: child.pid, startTime: startTime(child.pid) ?? '' };
  } finally {
    closeSync(fd);
  }
}

/** True when `pid` is alive and is still the process we started (same start time), not a zombie. */
export function isOurs(p: Started): boolean {
  const st = startTime(p.pid);
  if (st === undefined || st !== p.startTime) return false;
  try {
    const state = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
    return state.slice(state.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `signal` (SIGTERM unless said), then SIGKILL after `graceMs`; returns once the process is gone. */
export async function stopProcess(p: Started, graceMs = 5_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!isOurs(p)) return;
  try {
    process.kill(p.pid, signal);
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isOurs(p) && Date.now() < deadline) await sleep(50);
  if (isOurs(p)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    const hard = Date.now() + 2_000;
    while (isOurs(p) && Date.now() < hard) await sleep(20);
  }
}

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function poll<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(intervalMs);
  }
}

export const fileExists = existsSync;
