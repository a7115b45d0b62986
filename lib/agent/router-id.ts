// The BGP router ID: four octets every speaker needs (RFC 6286 allows any non-zero value unique
// in the AS). A node with an IPv4 address uses it, as calico/node does; an IPv6-only node has
// none, so it is told one (Calico's CALICO_ROUTER_ID) or `hash`, four octets derived from the
// node name so every restart picks the same one without anyone writing it down.
import { createHash } from 'node:crypto';
import { checkedRouterId, cidrAddress } from '../../ip/index.js';

/** `configured`: a dotted IPv4 router ID, `hash`, or undefined (the IPv4 address, else `hash`). */
export function routerIdFor(nodeName: string, ipv4Address: string, configured?: string): string {
  if (configured === 'hash' || (configured === undefined && !ipv4Address)) return hashRouterId(nodeName);
  if (configured !== undefined) {
    checkRouterId(configured);
    return configured;
  }
  return cidrAddress(ipv4Address, 'ipv4Address');
}

/** A router ID as ip/ takes one, or `hash`. */
export function checkRouterId(text: string, field = 'routerId'): void {
  if (text !== 'hash') checkedRouterId(text, field, 'hash');
}

/** Four octets from the node name; never 0.0.0.0. */
export function hashRouterId(nodeName: string): string {
  const d = createHash('sha256').update(nodeName).digest();
  const octets: number[] = [d[0]!, d[1]!, d[2]!, d[3]!];
  if (octets.join('.') === '0.0.0.0') octets[3] = 1;
  return octets.join('.');
}
