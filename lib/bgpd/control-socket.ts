// Who may talk to a daemon's control socket, and how much they may send. Whoever can connect to
// it can originate routes and drop peers, so its mode and group are set explicitly rather than
// left to the umask, and a request is bounded in size and in time.
import { chownSync, chmodSync, lstatSync, statSync, unlinkSync } from 'node:fs';
import type http from 'node:http';
import { connect, type Server } from 'node:net';
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { ownerName, privateFolder, trustedOwner } from '../files/index.js';
import { ConfigError, at, isObj, Mistakes, onlyKeys } from './fields.js';

/** The `control` field of a daemon's file: a socket path, or `{ path, mode, group }`. */
export interface ControlSocketConfig {
  path?: string;
  /** Permission bits of the socket file; read and write are what connecting needs. */
  mode: number;
  /** A group name or number; its members may connect when the mode lets the group write. */
  group?: string | number;
}

/** A socket ready to be created: the group resolved to its number. */
export interface ControlSocket {
  path: string;
  mode: number;
  gid?: number;
}

/** Owner and group, as FRR's and BIRD's control sockets: no one else. */
export const DEFAULT_CONTROL_MODE = 0o660;
/** A control call is a few hundred bytes; a batch of prefixes to originate is well under this. */
export const MAX_REQUEST_BODY = 1024 * 1024;
/** A client that has not sent its headers, or its whole request, by then is cut off. */
export const HEADERS_TIMEOUT_MS = 5_000;
export const REQUEST_TIMEOUT_MS = 10_000;

export function controlSocketField(v: unknown, path: string): ControlSocketConfig {
  if (typeof v === 'string') return { path: socketPath(v, path), mode: DEFAULT_CONTROL_MODE };
  if (!isObj(v)) throw new ConfigError(`${path}: a socket path, or { path, mode, group }`);
  const m = new Mistakes();
  m.check(() => onlyKeys(v, new Set(['path', 'mode', 'group']), path));
  const out = {
    path: v.path === undefined ? undefined : m.take(() => socketPath(v.path, at(path, 'path')), undefined),
    mode: v.mode === undefined ? DEFAULT_CONTROL_MODE : m.take(() => socketMode(v.mode, at(path, 'mode')), DEFAULT_CONTROL_MODE),
    group: v.group === undefined ? undefined : m.take(() => groupField(v.group, at(path, 'group')), undefined),
  };
  m.throwIfAny();
  return out;
}

function socketPath(v: unknown, path: string): string {
  if (typeof v !== 'string' || v === '') throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a file path`);
  // The kernel's sun_path holds 107 bytes and a NUL.
  if (Buffer.byteLength(v) > 107) throw new ConfigError(`${path}: ${v} is longer than a Unix socket path may be (107 bytes)`);
  return v;
}

/**
 * An octal string ("0660"). A YAML number is refused: `mode: 0660` reads as decimal 660 in
 * YAML 1.2, which would be a different mode from the one written.
 */
function socketMode(v: unknown, path: string): number {
  if (typeof v !== 'string' || !/^0?[0-7]{3}$/.test(v))
    throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a mode written in octal in quotes, like "0660"`);
  const mode = Number.parseInt(v, 8);
  if ((mode & 0o600) !== 0o600) throw new ConfigError(`${path}: ${v} leaves the daemon's own user without read and write`);
  return mode;
}

function groupField(v: unknown, path: string): string | number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 2 ** 32) return v;
  if (typeof v === 'string' && /^[A-Za-z_][A-Za-z0-9_.-]*\$?$/.test(v)) return v;
  throw new ConfigError(`${path}: ${JSON.stringify(v)} is not a group name or number`);
}

/**
 * The group's number (through NSS, as `getent` reads it, so LDAP groups work too), and a check
 * that nothing else lives at the path: run before the daemon listens on anything.
 */
export async function resolveControlSocket(c: ControlSocketConfig, path: string, field = 'control'): Promise<ControlSocket> {
  let gid: number | undefined;
  if (typeof c.group === 'number') gid = c.group;
  else if (c.group !== undefined) {
    let line = '';
    try {
      line = execFileSync('getent', ['group', c.group], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      throw new ConfigError(`${field}.group: no group named ${c.group}`);
    }
    gid = Number(line.split(':')[2]);
  }
  await claimSocketPath(path, field);
  return { path, mode: c.mode, gid };
}

/**
 * Makes the socket's folder if it is missing (0755 and the daemon's own, whatever the umask),
 * and refuses a folder on the way that another user could tamper with: whoever can rename the
 * socket can bind their own in its place and answer the daemon's clients. Then, as
 * refuseLiveSocket, takes the path over from a killed daemon; a socket file left there by
 * another user is refused, live or not.
 */
export async function claimSocketPath(path: string, field: string): Promise<void> {
  try {
    privateFolder(dirname(path), field);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  let uid: number;
  try {
    uid = lstatSync(path).uid;
  } catch {
    return;
  }
  if (!trustedOwner(uid)) throw new ConfigError(`${field}: ${path} exists and is owned by ${ownerName(uid)}: not this daemon's to replace`);
  await refuseLiveSocket(path, field);
}

/** A stale socket from a killed daemon is removed; a live one, or any other file, is not ours. */
export async function refuseLiveSocket(path: string, field: string): Promise<void> {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch {
    return;
  }
  if (!stat.isSocket()) throw new ConfigError(`${field}: ${path} exists and is not a socket`);
  const live = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
  if (live) throw new ConfigError(`${field}: ${path}: another daemon answers on it`);
  unlinkSync(path);
}

/**
 * Listens on the socket with no moment at which it is more open than asked: bind() creates the
 * file under a umask that leaves only the owner's bits, and the group and mode are set before
 * the first connection can be accepted (bind and listen run synchronously in listen(), and the
 * event loop accepts nothing until this returns). Resolves once listening.
 */
export function listenControlSocket(server: Server, s: ControlSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      resolve();
    });
    const umask = process.umask(0o177);
    try {
      server.listen(s.path);
    } finally {
      process.umask(umask);
    }
    // A failed bind is reported by the 'error' event; there is no file to set.
    if (!server.listening) return;
    try {
      if (statSync(s.path).mode & 0o077) throw new Error('created open to others (bind did not honour the umask)');
      if (s.gid !== undefined) chownSync(s.path, -1, s.gid);
      chmodSync(s.path, s.mode);
    } catch (e) {
      server.off('error', reject);
      server.close();
      reject(new Error(`control socket ${s.path}: ${(e as Error).message}`));
    }
  });
}

/** Time limits on every request: a client that trickles its request is cut off. */
export function limitRequests(server: http.Server): http.Server {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  // An idle kept-alive connection holds nothing, but is not held open for ever either.
  server.keepAliveTimeout = 5_000;
  server.maxConnections = 64;
  return server;
}

/** The server options that make the time limits above checked every second, not every 30 s. */
export const LIMITED_SERVER_OPTIONS: http.ServerOptions = { connectionsCheckingInterval: 1_000, maxHeaderSize: 16 * 1024 };

export class BodyTooLarge extends Error {
  override readonly name = 'BodyTooLarge';
  constructor(readonly limit: number) {
    super(`the request body is over the limit of ${limit} bytes (${limit / (1024 * 1024)} MiB)`);
  }
}

/** The body as text, refused as soon as it is known to be larger than `limit` bytes. */
export function readBody(req: http.IncomingMessage, limit = MAX_REQUEST_BODY): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) return reject(new BodyTooLarge(limit));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        chunks.length = 0;
        req.removeAllListeners('data');
        req.pause();
        reject(new BodyTooLarge(limit));
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
