// The control API of a running bgpd: HTTP with JSON bodies over a Unix socket, which works
// from any network namespace (it lives in the file system) and needs no open port.
import { existsSync, unlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressFamily, BgpSpeaker, NeighborConfig, RibRoute } from '../../bgp/index.js';
import { networkAttributes, type NetworkConfig } from './network.js';

/** A path as the control API shows it: plain data, the peer named by its address. */
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
  attributes: RibRoute['attributes'];
}

function view(r: RibRoute, best: boolean): RouteView {
  return {
    family: r.family, prefix: r.prefix, pathId: r.pathId, nextHop: r.nextHop, linkLocalNextHop: r.linkLocalNextHop,
    from: r.peer && r.peer.type !== 'local' ? r.peer.address : 'local', best, stale: r.stale, attributes: r.attributes,
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

type Handler = (body: Record<string, unknown>, query: URLSearchParams) => unknown;

export function serveControl(
  speaker: BgpSpeaker,
  socketPath: string,
  onStop: (message?: string) => void,
  extraStatus?: (speaker: BgpSpeaker) => Record<string, unknown>,
): http.Server {
  const routes: Record<string, Handler> = {
    'GET /status': () => ({ asn: speaker.asn, routerId: speaker.routerId, peers: speaker.peerStatus(), rib: speaker.rib.stats(), ...extraStatus?.(speaker) }),
    'GET /routes': (_b, q) => allPaths(speaker, (q.get('family') as AddressFamily) ?? 'ipv4-unicast'),
    'POST /originate': (b) => {
      // One prefix, or many at once (`prefixes`) sharing the same attributes.
      const attributes = networkAttributes({ ...b, prefix: '' } as unknown as NetworkConfig);
      const prefixes = Array.isArray(b.prefixes) ? b.prefixes.map(String) : [String(b.prefix)];
      for (const prefix of prefixes) speaker.originate(prefix, { attributes });
      return { originated: prefixes.length };
    },
    'POST /withdraw': (b) => speaker.withdraw(String(b.prefix)),
    'POST /peers': (b) => speaker.addPeer(b as unknown as NeighborConfig),
    'POST /peers/remove': (b) => speaker.removePeer(String(b.address)),
    'POST /refresh': (b) => speaker.refresh(String(b.address), (b.family as AddressFamily) ?? 'ipv4-unicast'),
    'POST /stop': (b) => onStop(typeof b.message === 'string' ? b.message : undefined),
  };
  if (existsSync(socketPath)) unlinkSync(socketPath);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://bgpd');
    const handler = routes[`${req.method} ${url.pathname}`];
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const reply = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value ?? null));
      };
      if (!handler) return reply(404, { error: `no such call: ${req.method} ${url.pathname}` });
      try {
        reply(200, handler(text ? JSON.parse(text) : {}, url.searchParams));
      } catch (e) {
        reply(400, { error: (e as Error).message });
      }
    });
  });
  server.listen(socketPath);
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
    req.on('error', (e) => reject(new Error(`bgpd control socket ${socketPath}: ${e.message}`)));
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
