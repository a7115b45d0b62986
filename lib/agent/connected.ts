// Whether a peer is directly connected: its address on a subnet of one of this node's
// interfaces (or link-local), as Calico's BFDIfDirectlyConnected asks before it runs BFD.
// Single-hop BFD (RFC 5881) is only for such peers: its packets leave at TTL 255 and are
// taken only at 255, so they never cross a router.
import { networkInterfaces } from 'node:os';
import { cidrContains, parseAddress, parseCidr } from '../../ip/index.js';

export function isDirectlyConnected(address: string, interfaces = networkInterfaces()): boolean {
  const bare = address.split('%')[0]!;
  if (/^fe[89ab][0-9a-f]:/i.test(bare)) return true;
  let peer: ReturnType<typeof parseAddress>;
  try {
    peer = parseAddress(bare, 'peer');
  } catch {
    return false;
  }
  for (const list of Object.values(interfaces)) {
    for (const a of list ?? []) {
      // A host route (/32, /128, a loopback's address) makes no neighbour reachable on a link.
      if (a.internal || !a.cidr || a.netmask === '255.255.255.255' || a.cidr.endsWith('/128')) continue;
      try {
        if (a.address.split('%')[0] !== bare && cidrContains(parseCidr(a.cidr, 'interface', false), peer)) return true;
      } catch {
        // An interface address ip/ does not read is no subnet of ours.
      }
    }
  }
  return false;
}
