// A podroute daemon run as a user runs it, to its end, and whether a port is being listened on:
// for the tests that a daemon which cannot start exits before it listens.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../bgp/session/free-port.js';
import { assertDistCurrent } from './dist.js';

const BIN = fileURLToPath(new URL('../../bin/podroute.js', import.meta.url));

export interface Exit {
  code: number | null;
  stderr: string;
}

/** Runs `podroute ...args` to its end; kills it and fails if it is still up after `ms`. */
export function podroute(args: string[], ms = 10_000): Promise<Exit> {
  assertDistCurrent();
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`still running after ${ms} ms; stderr: ${stderr}`));
    }, ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** Whether something accepts connections on 127.0.0.1:port (answered within a second). */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * `podroute node run` (node n1, memory datastore and dataplane) with `flags` after the defaults
 * exits 1 with an error matching `message`, never said it started, never served its health port
 * and left no control socket in `dir`.
 */
export async function nodeRunRefused(dir: string, flags: readonly string[], message: RegExp): Promise<void> {
  const port = await freePort();
  const control = join(dir, `node-${port}.sock`);
  const args = ['node', 'run', '--name', 'n1', '--dataplane', 'memory', '--datastore', 'memory'];
  const exit = await podroute([...args, '--control', control, '--health-port', String(port), ...flags]);
  assert.equal(exit.code, 1, exit.stderr);
  assert.match(exit.stderr, message);
  assert.doesNotMatch(exit.stderr, /"event":"started"/);
  assert.equal(await listening(port), false);
  assert.equal(existsSync(control), false, 'the control socket was left behind');
}
