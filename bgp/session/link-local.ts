// RFC 2545 §3: an IPv6 next hop carries our link-local address after the global one when we
// share a link with the peer, so that a directly connected peer (FRR, a router without a
// route to our global address yet) can forward over the link. The kernel knows our link-local
// address per interface; the session knows only the global address it runs over.
import { networkInterfaces } from 'node:os';
import { cidrContains, formatAddress, parseAddress, parseInterfaceAddress } from '../../ip/index.js';

type Interfaces = ReturnType<typeof networkInterfaces>;

function canonical(text: string): string | undefined {
  try {
    return formatAddress(parseAddress(text.split('%')[0]!));
  } catch {
    return undefined;
  }
}

/**
 * Our link-local address on the interface that holds the session's `localAddress`, when the
 * peer at `peerAddress` is on that interface's link (in its subnet, or itself link-local); else
 * undefined. The session may be IPv4 and carry IPv6 routes: the link is what counts.
 */
export function linkLocalFor(localAddress: string, peerAddress: string, interfaces: Interfaces = networkInterfaces()): string | undefined {
  const local = canonical(localAddress);
  const peer = canonical(peerAddress);
  if (!local || !peer || local.includes(':') !== peer.includes(':')) return undefined;
  for (const addrs of Object.values(interfaces)) {
    const here = addrs?.find((a) => canonical(a.address) === local);
    if (!here) continue;
    const onLink = peer.startsWith('fe80:') || cidrContains(parseInterfaceAddress(here.cidr ?? local), parseAddress(peer));
    if (!onLink) return undefined;
    const ll = addrs!.find((a) => a.family === 'IPv6' && a.address.toLowerCase().startsWith('fe80:'));
    return ll ? canonical(ll.address) : undefined;
  }
  return undefined;
}
