// The control API of a running bgpd: HTTP with JSON bodies over a Unix socket, which works
// from any network namespace (it lives in the file system) and needs no open port. A call's
// body goes through the checks of the configuration files: a bad one gets 400 with the field
// named, and the speaker is left as it was. Who may connect, and how much a call may send, is
// control-socket.ts's.
import http from 'node:http';
import { attributesToJSON, type AddressFamily, type BgpSpeaker, type PathAttributesJson, type RibRoute } from '../../bgp/index.js';
import { neighbor } from './config.js';
import {
  BodyTooLarge,
  DEFAULT_CONTROL_MODE,
  LIMITED_SERVER_OPTIONS,
  limitRequests,
  listenControlSocket,
  readBody,
  type ControlSocket,
} from './control-socket.js';
import { ConfigError, family, ip, isObj, num, onlyKeys, prefix, type Obj } from './fields.js';
import { ribRoutes } from './control-rib.js';
import { networkAttributes, networks } from './network.js';

/** A path as the control API shows it: plain data, the peer named by its address, communities as text. */
export interface RouteView {
  family: AddressFamily;
  prefix: string;
  pathId: number;
  nextHop: string;
  linkLocalNextHop?: string;
  /** The peer's address; "local" for an originated route. */
  from: string;
  best: boolean;
  stale: boolean;
  attributes: PathAttributesJson;
}

function view(r: RibRoute, best: boolean): RouteView {
  return {
    family: r.family,
    prefix: r.prefix,
    pathId: r.pathId,
    nextHop: r.nextHop,
    linkLocalNextHop: r.linkLocalNextHop,
    from: r.peer && r.peer.type !== 'local' ? r.peer.address : 'local',
    best,
    stale: r.stale,
    attributes: attributesToJSON(r.attributes),
  };
}

/** Every path of every prefix of a family, best first per prefix. */
export function allPaths(speaker: BgpSpeaker, family: AddressFamily): RouteView[] {
  const out: RouteView[] = [];
  for (const best of speaker.routes(family)) {
    const all = speaker.lookup(best.prefix);
    for (const p of all?.paths ?? [best]) out.push(view(p, p === all?.paths[0]));
  }
  return out;
}

type Handler = (body: Obj, query: URLSearchParams) => unknown;

/** A body with these fields only (a call that takes no field gets an empty mapping). */
function fields(body: Obj, ...keys: string[]): Obj {
  onlyKeys(body, new Set(keys), '');
  return body;
}

/** One prefix, or many at once (`prefixes`) sharing the same attributes. */
function originate(speaker: BgpSpeaker, body: Obj): { originated: number } {
  const { prefixes, attributes } = networks(body, '');
  const options = { attributes: networkAttributes(attributes) };
  for (const p of prefixes) speaker.originate(p, options);
  return { originated: prefixes.length };
}

/**
 * Answers the control API on a Unix socket (a path is created with the default mode, 0660, and
 * the daemon's group). Resolves once it listens.
 */
export async function serveControl(
  speaker: BgpSpeaker,
  socket: string | ControlSocket,
  onStop: (message?: string) => void,
  extraStatus?: (speaker: BgpSpeaker) => Record<string, unknown>,
): Promise<http.Server> {
  const routes: Record<string, Handler> = {
    'GET /status': () => ({
      asn: speaker.asn,
      routerId: speaker.routerId,
      peers: speaker.peerStatus(),
      rib: speaker.rib.stats(),
      ...extraStatus?.(speaker),
    }),
    'GET /routes': (_b, q) => allPaths(speaker, family(q.get('family') ?? 'ipv4-unicast', 'family')),
    'POST /originate': (b) => originate(speaker, b),
    'POST /withdraw': (b) => speaker.withdraw(prefix(fields(b, 'prefix').prefix, 'prefix')),
    'POST /peers': (b) => speaker.addPeer(neighbor(b, '')),
    'POST /peers/remove': (b) => speaker.removePeer(ip(fields(b, 'address').address, 'address')),
    // A peer held down for exceeding its maxPrefixes starts again now (FRR's `clear bgp`).
    'POST /peers/clear-max-prefix': (b) => ({ cleared: speaker.clearMaxPrefix(ip(fields(b, 'address').address, 'address')) }),
    'POST /refresh': (b) => {
      const { address, family: f } = fields(b, 'address', 'family');
      speaker.refresh(ip(address, 'address'), family(f ?? 'ipv4-unicast', 'family'));
    },
    ...ribRoutes(speaker),
    // RFC 8326: our routes again with GRACEFUL_SHUTDOWN, a wait for the peers to move, then the
    // stop. Answers at once; the daemon exits as after POST /stop once the sessions closed.
    'POST /drain': (b) => {
      const { message, settleMs, timeoutMs } = fields(b, 'message', 'settleMs', 'timeoutMs');
      if (message !== undefined && typeof message !== 'string')
        throw new ConfigError(`message: ${JSON.stringify(message)} is not a string`);
      const ms = (v: unknown, name: string) => (v === undefined ? undefined : num(v, name, 0, 3_600_000));
      const options = { message: message as string | undefined, settleMs: ms(settleMs, 'settleMs'), timeoutMs: ms(timeoutMs, 'timeoutMs') };
      if (!speaker.isDraining) void speaker.drain(options).then(() => onStop(options.message ?? 'drained'));
      return { draining: true };
    },
    'POST /stop': (b) => {
      const { message } = fields(b, 'message');
      if (message !== undefined && typeof message !== 'string')
        throw new ConfigError(`message: ${JSON.stringify(message)} is not a string`);
      onStop(message);
    },
  };
  const server = http.createServer(LIMITED_SERVER_OPTIONS, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://bgpd');
    const handler = routes[`${req.method} ${url.pathname}`];
    const reply = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value ?? null));
    };
    readBody(req).then(
      (text) => {
        if (!handler) return reply(404, { error: `no such call: ${req.method} ${url.pathname}` });
        try {
          const body: unknown = text ? JSON.parse(text) : {};
          if (!isObj(body)) throw new ConfigError(`the body is a JSON object, not ${JSON.stringify(body)}`);
          reply(200, handler(body, url.searchParams));
        } catch (e) {
          reply(400, { error: (e as Error).message });
        }
      },
      (e: Error) => {
        // The rest of an oversize body is not read: the connection closes after the answer.
        if (e instanceof BodyTooLarge) res.setHeader('connection', 'close');
        reply(e instanceof BodyTooLarge ? 413 : 400, { error: e.message });
      },
    );
  });
  limitRequests(server);
  await listenControlSocket(server, typeof socket === 'string' ? { path: socket, mode: DEFAULT_CONTROL_MODE } : socket);
  return server;
}

/** Calls a running bgpd. Throws with the daemon's own message on an error. */
export function callControl<T = unknown>(socketPath: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => {
        const value = text ? JSON.parse(text) : null;
        if (res.statusCode !== 200) reject(new Error(value?.error ?? `bgpd answered ${res.statusCode}`));
        else resolve(value as T);
      });
    });
    req.on('error', (e) => reject(new Error(`control socket ${socketPath}: ${e.message}`)));
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
