// The control API's calls in GoBGP's terms: `global rib add/del`, `neighbor`, `neighbor ADDR
// adj-in|adj-out`, `neighbor ADDR reset|softreset`. serveControl adds them to its own.
import { attributesToJSON, type BgpSpeaker, type PeerStatus } from '../../bgp/index.js';
import { ConfigError, family, ip, onlyKeys, prefix, type Obj } from './fields.js';
import { networkAttributes, networks } from './network.js';

type Handler = (body: Obj, query: URLSearchParams) => unknown;

/** The peer named by `address` (query or body); unknown peers are an error naming it. */
function peerOf(speaker: BgpSpeaker, address: unknown): PeerStatus {
  const a = ip(address, 'address');
  const p = speaker.peerStatus().find((s) => s.address === a);
  if (!p) throw new ConfigError(`address: ${a} is not a peer`);
  return p;
}

/** A route to originate: one prefix, its next hop (default: the session's own address) and attributes. */
function ribAdd(speaker: BgpSpeaker, body: Obj): { added: string } {
  const { nextHop, ...rest } = body;
  const options: { nextHop?: string; attributes: ReturnType<typeof networkAttributes> } = {
    attributes: networkAttributes(networks(rest, '').attributes),
  };
  if (nextHop !== undefined) options.nextHop = ip(nextHop, 'nextHop');
  const p = prefix(rest.prefix, 'prefix');
  speaker.originate(p, options);
  return { added: p };
}

const SOFT = new Set(['in', 'out', 'both']);

export function ribRoutes(speaker: BgpSpeaker): Record<string, Handler> {
  return {
    'POST /rib/add': (b) => ribAdd(speaker, b),
    'POST /rib/del': (b) => {
      onlyKeys(b, new Set(['prefix']), '');
      const p = prefix(b.prefix, 'prefix');
      // Withdrawing what was never originated would change nothing: say so rather than "deleted".
      if (!speaker.lookup(p)?.paths.some((r) => !r.peer || r.peer.type === 'local'))
        throw new ConfigError(`prefix: ${p} is not a route this speaker originated (FROM local in bgpd routes)`);
      speaker.withdraw(p);
      return { deleted: p };
    },
    'GET /neighbors': () => speaker.peerStatus(),
    'GET /neighbor': (_b, q) => peerOf(speaker, q.get('address')),
    'GET /neighbor/adj-in': (_b, q) => {
      const p = peerOf(speaker, q.get('address'));
      const f = family(q.get('family') ?? 'ipv4-unicast', 'family');
      return speaker.adjRibIn(p.address, f).map((r) => ({
        prefix: r.prefix,
        pathId: r.pathId,
        nextHop: r.nextHop,
        stale: r.stale,
        attributes: attributesToJSON(r.attributes),
      }));
    },
    'GET /neighbor/adj-out': (_b, q) => {
      const p = peerOf(speaker, q.get('address'));
      return speaker
        .adjRibOut(p.address, family(q.get('family') ?? 'ipv4-unicast', 'family'))
        .map((r) => ({ ...r, attributes: attributesToJSON(r.attributes) }));
    },
    // Answered at once; the session goes down and starts again behind the answer.
    'POST /neighbor/reset': (b) => {
      onlyKeys(b, new Set(['address', 'message']), '');
      if (b.message !== undefined && typeof b.message !== 'string') throw new ConfigError('message: not a string');
      const p = peerOf(speaker, b.address);
      void speaker.resetPeer(p.address, b.message as string | undefined);
      return { reset: p.address };
    },
    'POST /neighbor/softreset': (b) => {
      onlyKeys(b, new Set(['address', 'direction', 'family']), '');
      const p = peerOf(speaker, b.address);
      const direction = b.direction ?? 'both';
      if (typeof direction !== 'string' || !SOFT.has(direction))
        throw new ConfigError(`direction: ${JSON.stringify(direction)} must be in, out or both`);
      const f = family(b.family ?? 'ipv4-unicast', 'family');
      if (p.state !== 'Established') throw new ConfigError(`address: ${p.address} is ${p.state}, not Established`);
      if (direction !== 'out') speaker.refresh(p.address, f);
      if (direction !== 'in') speaker.resend(p.address, f);
      return { softreset: p.address, direction, family: f };
    },
  };
}
