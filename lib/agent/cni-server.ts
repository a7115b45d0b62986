// The CNI plugin's work, done inside the node agent for the C shim (cni/shim/podroute-cni.c),
// as Cilium's agent does for its plugin: a runtime's call then costs a connect instead of
// starting Node and connecting to the datastore. Each connection on the Unix socket carries one
// call, framed as the shim's header comment describes: the CNI_* and PODROUTE_* environment and
// the netconf in, the exit code and stdout back. The call runs through runCni, the Node plugin's
// own code (every check, the undo stack, the result shapes), with the environment passed
// explicitly, so calls run side by side as separate processes would.
import net from 'node:net';
import { claimSocketPath, listenControlSocket } from '../bgpd/control-socket.js';
import { CNI_CODES, CniError } from '../cni/errors.js';
import { runCni } from '../cni/main.js';
import { STATUS_CODES } from '../cni/status-gc.js';
import { WarmStores } from './cni-stores.js';

/** Where the shim looks unless PODROUTE_CNI_SOCKET says otherwise. */
export const DEFAULT_CNI_SOCKET = '/run/podroute/cni.sock';
/** Owner and group, as the control socket: whoever connects runs CNI calls as the agent's user. */
export const CNI_SOCKET_MODE = 0o660;
/** Environment, netconf and framing together; a netconf is a few KiB. */
export const MAX_CNI_REQUEST = 1024 * 1024;
/** A shim sends its whole call at once: one slower than this is cut off. */
export const CNI_READ_TIMEOUT_MS = 10_000;
/**
 * A call that has not answered by then gets "try again later"; it still runs to its end (its
 * undo stack included), so a runtime that retries finds either its result or nothing.
 */
export const CNI_CALL_TIMEOUT_MS = 120_000;

const REQUEST_MAGIC = 'PODROUTE-CNI 1\n';
const ANSWER_MAGIC = 'PODROUTE-CNI 1';

/** The environment a call may carry: what the plugin reads, nothing of the agent's own. */
export function callEnvironment(entries: readonly string[]): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const kv of entries) {
    const i = kv.indexOf('=');
    if (i <= 0) continue;
    const k = kv.slice(0, i);
    if (k.startsWith('CNI_') || k.startsWith('PODROUTE_') || k === 'NODENAME') env[k] = kv.slice(i + 1);
  }
  return env;
}

/**
 * The socket a setting asks for: a path, "off", or unset (the default path when the agent runs
 * as root, for only root's runtime can use it; off otherwise).
 */
export function cniSocketPath(setting: string | undefined, isRoot: boolean): string | undefined {
  if (setting === 'off') return undefined;
  if (setting !== undefined && setting !== '') {
    if (!setting.startsWith('/')) throw new Error(`cniSocket: ${JSON.stringify(setting)} must be an absolute path or off`);
    return setting;
  }
  return isRoot ? DEFAULT_CNI_SOCKET : undefined;
}

/** Splits a request: the environment entries and the netconf, or why it is not one. */
export function parseRequest(buf: Buffer): { env: string[]; stdin: string } | string {
  if (buf.subarray(0, REQUEST_MAGIC.length).toString('latin1') !== REQUEST_MAGIC)
    return 'the request does not start with the shim framing "PODROUTE-CNI 1" (a shim from another podroute version?)';
  const env: string[] = [];
  let at = REQUEST_MAGIC.length;
  for (;;) {
    const end = buf.indexOf(0, at);
    if (end < 0) return 'the request ends inside its environment (no empty entry closes it)';
    if (end === at) break;
    env.push(buf.subarray(at, end).toString('utf8'));
    at = end + 1;
  }
  return { env, stdin: buf.subarray(at + 1).toString('utf8') };
}

/** An error answer that says the datastore could not be reached (try again later, or STATUS's "not available"). */
function unreachable(output: string): boolean {
  try {
    const code = (JSON.parse(output) as { code?: unknown }).code;
    return code === CNI_CODES.tryAgainLater || code === STATUS_CODES.pluginNotAvailable;
  } catch {
    return false;
  }
}

function answer(socket: net.Socket, code: number, output: string): void {
  if (socket.destroyed) return;
  socket.end(`${ANSWER_MAGIC} ${code}\n${output ? `${output}\n` : ''}`);
}

function errorAnswer(socket: net.Socket, code: number, msg: string): void {
  answer(socket, 1, JSON.stringify(new CniError(code, msg).toJSON('1.0.0')));
}

export interface CniServer {
  readonly path: string;
  /** Calls running now. */
  readonly inFlight: number;
  /** Stops accepting, waits (bounded) for the calls running, closes the warm datastore clients. */
  close(waitMs?: number): Promise<void>;
}

export interface CniServerOptions {
  log?: (event: string, fields: Record<string, unknown>) => void;
  callTimeoutMs?: number;
}

export async function serveCni(socketPath: string, options: CniServerOptions = {}): Promise<CniServer> {
  const log = options.log ?? (() => undefined);
  const callTimeoutMs = options.callTimeoutMs ?? CNI_CALL_TIMEOUT_MS;
  const stores = new WarmStores();
  const running = new Set<Promise<unknown>>();

  const call = async (socket: net.Socket, env: NodeJS.ProcessEnv, stdin: string): Promise<void> => {
    const opener = stores.opener();
    // What a call left or replaced of another container's (a stale sandbox's DEL, a new sandbox's ADD).
    const work = runCni(env, stdin, opener.open, (n) =>
      log(`cni-${n.action}`, { command: env.CNI_COMMAND, container: env.CNI_CONTAINERID, what: n.what, why: n.why }),
    );
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), callTimeoutMs);
    });
    const done = work.then((r) => {
      // Unreachable: the next call connects afresh rather than wait on this client's reconnects.
      if (r.code !== 0 && unreachable(r.output)) stores.retire(opener.used);
      return r;
    });
    const tracked = done.catch(() => undefined);
    running.add(tracked);
    void tracked.finally(() => running.delete(tracked));
    const r = await Promise.race([done, late]).finally(() => clearTimeout(timer));
    if (r === 'late') {
      log('cni-call-timeout', { command: env.CNI_COMMAND, container: env.CNI_CONTAINERID, afterMs: callTimeoutMs });
      return errorAnswer(socket, CNI_CODES.tryAgainLater, `the node agent has not finished the call in ${callTimeoutMs} ms`);
    }
    answer(socket, r.code, r.output);
  };

  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    socket.setTimeout(CNI_READ_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('data', (c: Buffer) => {
      if (refused) return;
      size += c.length;
      if (size > MAX_CNI_REQUEST) {
        refused = true;
        log('cni-request-refused', { why: 'over the size limit', limit: MAX_CNI_REQUEST });
        errorAnswer(socket, CNI_CODES.decodeFailure, `the call is over the node agent's limit of ${MAX_CNI_REQUEST} bytes (1 MiB)`);
        socket.destroySoon();
        return;
      }
      chunks.push(c);
    });
    socket.on('end', () => {
      if (refused) return;
      socket.setTimeout(0);
      const req = parseRequest(Buffer.concat(chunks));
      if (typeof req === 'string') {
        log('cni-request-refused', { why: req });
        return errorAnswer(socket, CNI_CODES.invalidEnvironment, req);
      }
      call(socket, callEnvironment(req.env), req.stdin).catch((e: Error) =>
        errorAnswer(socket, CNI_CODES.internal, `the node agent failed the call: ${e.message}`),
      );
    });
  });
  server.maxConnections = 256;

  // As a daemon's control socket: its folder made or checked (no other user may move the socket
  // aside and answer the runtime), a live one is another agent's, a stale one is replaced, and
  // the file is never open to others, even briefly; a bind that fails fails the start.
  await claimSocketPath(socketPath, 'cniSocket');
  await listenControlSocket(server, { path: socketPath, mode: CNI_SOCKET_MODE }).catch((e: Error) => {
    throw new Error(`cniSocket: ${socketPath}: ${e.message}`);
  });
  server.on('error', (e) => log('error', { error: `cni socket: ${e.message}` }));

  return {
    path: socketPath,
    get inFlight() {
      return running.size;
    },
    async close(waitMs = 5_000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const bounded = new Promise<void>((resolve) => setTimeout(resolve, waitMs).unref());
      await Promise.race([Promise.all([...running]), bounded]);
      await stores.stop();
      await Promise.race([closed, bounded]);
    },
  };
}
