// A podroute daemon run as a user runs it, to its end, and whether a port is being listened on:
// for the tests that a daemon which cannot start exits before it listens.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../bin/podroute.js', import.meta.url));

export interface Exit {
  code: number | null;
  stderr: string;
}

/** Runs `podroute ...args` to its end; kills it and fails if it is still up after `ms`. */
export function podroute(args: string[], ms = 10_000): Promise<Exit> {
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
