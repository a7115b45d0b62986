// BGPPeer.peerIP as Calico writes it: an address, "ipv4:port" or "[ipv6]:port".
import { parseAddress } from '../../ip/index.js';

/** 4, 6, or 0 when not an address (ip/ is the one parser every layer shares). */
function familyOf(s: string): 0 | 4 | 6 {
  try {
    return parseAddress(s, 'peerIP').family;
  } catch {
    return 0;
  }
}

export interface PeerAddress {
  address: string;
  /** Absent: the cluster's listenPort (BGPConfiguration), as Calico does. */
  port?: number;
}

/** The address and port of a peerIP, or undefined when it is neither form. */
export function parsePeerIP(peerIP: string): PeerAddress | undefined {
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(peerIP);
  const v4port = /^([\d.]+):(\d{1,5})$/.exec(peerIP);
  const m = bracketed ?? v4port;
  if (m) {
    const port = Number(m[2]);
    const family = familyOf(m[1]!);
    if (port < 1 || port > 65535 || family === 0 || (bracketed && family !== 6)) return undefined;
    return { address: m[1]!, port };
  }
  return familyOf(peerIP) === 0 ? undefined : { address: peerIP };
}
