// A real unprivileged user for the tests of who may touch a daemon's files: `nobody` (uid 65534,
// no groups) through setpriv, a Node process of that user listening on a socket, and a umask
// held for the length of one call.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NOBODY = 65534;
const AS_NOBODY = ['--reuid', String(NOBODY), '--regid', String(NOBODY), '--clear-groups'];

/** Runs `argv` as nobody: exit status and output. */
export function asNobody(argv: readonly string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('setpriv', [...AS_NOBODY, ...argv], { encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a Node script as nobody; its exit status and output. */
export function nodeAsNobody(script: string, ...args: string[]): { code: number; stdout: string; stderr: string } {
  return asNobody([process.execPath, '-e', script, ...args]);
}

/**
 * A process of nobody's listening on `path` (a socket nobody binds), answering every connection
 * with `answer`; resolves once it listens, or rejects with why it could not.
 */
export function nobodyListens(path: string, answer: string): Promise<{ stop(): void }> {
  const script = `const s = require('net').createServer((c) => c.end(process.argv[2]));
s.on('error', (e) => { console.error(e.message); process.exit(1); });
s.listen(process.argv[1], () => console.log('listening'));`;
  const p = spawn('setpriv', [...AS_NOBODY, process.execPath, '-e', script, path, answer], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let err = '';
    p.stderr.on('data', (c: Buffer) => (err += c.toString()));
    p.stdout.once('data', () => resolve({ stop: () => p.kill() }));
    p.once('exit', (code) => reject(new Error(`nobody could not listen on ${path} (exit ${code}): ${err.trim()}`)));
  });
}

/** A fresh folder under the temp folder, 0755 root's, so that nobody can reach what is made in it. */
export function reachableTempDir(tag: string): string {
  const dir = mkdtempSync(join(tmpdir(), `podroute-${tag}-`));
  chmodSync(dir, 0o755);
  return dir;
}

/** `fn` run with the process umask at `mask`, restored after. */
export function underUmask<T>(mask: number, fn: () => T): T {
  const old = process.umask(mask);
  try {
    return fn();
  } finally {
    process.umask(old);
  }
}

/** Async `fn` with the umask at `mask`; nothing else in the process runs files meanwhile in these tests. */
export async function underUmaskAsync<T>(mask: number, fn: () => Promise<T>): Promise<T> {
  const old = process.umask(mask);
  try {
    return await fn();
  } finally {
    process.umask(old);
  }
}

/** A folder made as nobody's (chown after mkdir, as a user who got there first would have it). */
export function nobodysFolder(path: string, mode = 0o755): string {
  execFileSync('install', ['-d', '-o', String(NOBODY), '-g', String(NOBODY), '-m', mode.toString(8), path]);
  return path;
}
