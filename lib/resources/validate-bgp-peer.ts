// BGPPeer's fields, taken as Calico writes them: peers by address (peerIP with an optional port)
// or by selector (peerSelector, each picked node at its own address and AS), and the session
// options the speaker can honour; the ones it cannot are refused with the reason.
import { REDACTED } from './secrets.js';
import { BGP_PEER_FIELDS, BGP_PEER_REFUSED } from './calico-fields.js';
import type { Checker, Obj } from './checker.js';
import { checkBgpPeerMaxPrefixes } from './max-prefixes.js';
import { parsePeerIP } from './peer-ip.js';
import { durationSeconds } from './duration.js';
import type { BGPPeerSpec } from './types.js';

const FILTER_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const DURATION_RE = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

export function checkBGPPeer(c: Checker, s: Obj): Obj {
  c.only(s, BGP_PEER_FIELDS, 'spec', BGP_PEER_REFUSED);
  const out: Obj = {};
  const peerIP = c.str(s, 'peerIP', 'spec');
  const ps = c.selector(s, 'peerSelector', 'spec');
  // Either one address (and its AS) or the nodes a selector picks (each with its own AS), as Calico.
  if (ps !== undefined && ps.trim() !== '') {
    if (peerIP) c.fail('spec.peerIP', 'set either peerIP or peerSelector, not both');
    if (s.asNumber !== undefined && s.asNumber !== null)
      c.fail('spec.asNumber', "must be empty with peerSelector: each picked node's own AS is used");
    out.peerSelector = ps;
  } else {
    if (!peerIP) c.fail('spec.peerIP', 'is required (or peerSelector, to peer with the nodes it picks)');
    checkPeerIP(c, peerIP, 'spec.peerIP');
    out.peerIP = peerIP;
    out.asNumber = c.asNumber(s, 'asNumber', 'spec', true);
  }
  const node = c.str(s, 'node', 'spec');
  if (node) out.node = node;
  const ns = c.selector(s, 'nodeSelector', 'spec');
  if (ns !== undefined) out.nodeSelector = ns;
  if (node && ns) c.fail('spec.nodeSelector', 'set either node or nodeSelector, not both');
  checkPeerSessionOptions(c, s, out);
  const localAs = c.asNumber(s, 'localASNumber', 'spec');
  if (localAs !== undefined) out.localASNumber = localAs;
  const filters = checkFilterNames(c, s);
  if (filters !== undefined) out.filters = filters;
  if (s.maxPrefixes !== undefined && s.maxPrefixes !== null)
    out.maxPrefixes = checkBgpPeerMaxPrefixes(c, s.maxPrefixes, 'spec.maxPrefixes');
  return out;
}

/** BGPPeer.filters: BGPFilter names, each once; a name no BGPFilter has yet applies nothing until one is made, as in Calico. */
function checkFilterNames(c: Checker, s: Obj): string[] | undefined {
  const list = c.list(s, 'filters', 'spec', 'a list of BGPFilter names');
  if (list === undefined) return undefined;
  const seen = new Set<string>();
  return list.map((v, i) => {
    const field = `spec.filters[${i}]`;
    if (typeof v !== 'string' || v.length > 253 || !FILTER_NAME.test(v))
      c.fail(field, `${JSON.stringify(v)} is not a BGPFilter name (lower-case letters, digits, '-' and '.')`);
    if (seen.has(v)) c.fail(field, `${v} is named twice: a filter's rules would only run again after they failed to match`);
    seen.add(v);
    return v;
  });
}

function checkPeerIP(c: Checker, peerIP: string, field: string): void {
  if (parsePeerIP(peerIP) !== undefined) return;
  if (/^(\[.*\]|[\d.]+):\d+$/.test(peerIP))
    c.fail(field, `${JSON.stringify(peerIP)} is not an address with a port (ipv4:port or [ipv6]:port, port 1..65535)`);
  c.fail(field, `${JSON.stringify(peerIP)} is not an IP address`);
}

/** BGPPeer.password and BGPConfiguration.nodeMeshPassword: a plain secret or a secretKeyRef. */
export function checkPassword(c: Checker, v: unknown, field: string): NonNullable<BGPPeerSpec['password']> {
  if (typeof v === 'string') {
    if (v === REDACTED) c.fail(field, 'is the marker podroute get prints in place of a password; give the password itself');
    return v;
  }
  const p = c.obj(v, field);
  c.only(p, ['secretKeyRef'], field);
  const ref = c.obj(p.secretKeyRef, `${field}.secretKeyRef`);
  c.only(ref, ['name', 'key', 'optional'], `${field}.secretKeyRef`);
  if (ref.optional !== undefined && ref.optional !== false)
    c.fail(`${field}.secretKeyRef.optional`, 'an optional secret is not supported by podroute: a session with a password needs it');
  return {
    secretKeyRef: {
      name: c.str(ref, 'name', `${field}.secretKeyRef`, true)!,
      key: c.str(ref, 'key', `${field}.secretKeyRef`, true)!,
    },
  };
}

/** The session options of a BGPPeer (everything but who peers with whom). */
function checkPeerSessionOptions(c: Checker, s: Obj, out: Obj): void {
  if (s.password !== undefined && s.password !== null) out.password = checkPassword(c, s.password, 'spec.password');
  const knh = c.bool(s, 'keepOriginalNextHop', 'spec');
  if (knh !== undefined) out.keepOriginalNextHop = knh;
  const mrt = c.str(s, 'maxRestartTime', 'spec');
  if (mrt !== undefined) {
    if (!DURATION_RE.test(mrt)) c.fail('spec.maxRestartTime', `${JSON.stringify(mrt)} is not a duration like 120s or 2m`);
    out.maxRestartTime = mrt;
  }
  const source = c.oneOf(s, 'sourceAddress', 'spec', ['UseNodeIP', 'None'] as const, 'UseNodeIP');
  if (s.sourceAddress !== undefined && s.sourceAddress !== null) out.sourceAddress = source;
  const allowed = c.int(s, 'numAllowedLocalASNumbers', 'spec', 0, 255);
  if (allowed !== undefined && allowed > 0)
    c.fail(
      'spec.numAllowedLocalASNumbers',
      "is not supported by podroute: its speaker always drops a route whose AS_PATH holds the node's own AS (no allowas-in); only 0 is taken",
    );
  const ttl = c.int(s, 'ttlSecurity', 'spec', 0, 255);
  if (ttl !== undefined && ttl > 0) out.ttlSecurity = ttl;
  const gw = c.oneOf(s, 'birdGatewayMode', 'spec', ['Recursive', 'DirectIfDirectlyConnected'] as const, 'Recursive');
  if (s.birdGatewayMode !== undefined && s.birdGatewayMode !== null) out.birdGatewayMode = gw;
  const via = c.str(s, 'reachableBy', 'spec');
  if (via) {
    const gw = parsePeerIP(via);
    if (gw === undefined || gw.port !== undefined)
      c.fail('spec.reachableBy', `${JSON.stringify(via)} is not an IP address (the gateway the peer is reached through)`);
    const peer = typeof s.peerIP === 'string' ? parsePeerIP(s.peerIP) : undefined;
    if (peer && peer.address.includes(':') !== via.includes(':'))
      c.fail('spec.reachableBy', `${via} is not of peerIP's family: the static route to the peer goes through it`);
    out.reachableBy = via;
  }
  const bfd = c.oneOf(s, 'failureDetectionMode', 'spec', ['None', 'BFDIfDirectlyConnected'] as const, 'None');
  if (bfd === 'BFDIfDirectlyConnected') out.failureDetectionMode = bfd;
  const restart = c.oneOf(s, 'restartMode', 'spec', ['GracefulRestart', 'LongLivedGracefulRestart'] as const, 'GracefulRestart');
  if (s.restartMode !== undefined && s.restartMode !== null) out.restartMode = restart;
  // The long-lived stale time travels in 24 bits (RFC 9494), the restart time in 12 (RFC 4724).
  if (restart === 'LongLivedGracefulRestart' && mrt !== undefined && DURATION_RE.test(mrt) && durationSeconds(mrt) > 0xffffff)
    c.fail('spec.maxRestartTime', `${mrt} is longer than the longest long-lived stale time, 16777215s`);
  const nh = c.oneOf(s, 'nextHopMode', 'spec', ['Auto', 'Self', 'Keep'] as const, 'Auto');
  if (nh === 'Keep') c.fail('spec.nextHopMode', 'Keep: write keepOriginalNextHop: true, which podroute honours on iBGP sessions');
  if (nh === 'Self') c.fail('spec.nextHopMode', 'Self is not supported by podroute on BGPPeers; only Auto is taken');
}
