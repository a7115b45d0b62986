// The node's address, found the way calico/node's IP_AUTODETECTION_METHOD does it:
// "first-found" (the first IPv4 address on a non-loopback interface) or
// "interface=<regex>" (the first IPv4 address on an interface whose name matches).
import { networkInterfaces } from 'node:os';
import { AddressError, parseCidr } from '../../ip/index.js';

export interface DetectedAddress {
  /** Address with prefix length, e.g. 10.0.1.5/24. */
  cidr: string;
  interface: string;
}

const SKIP = /^(lo|cali.*|vxlan.*|tunl.*|docker.*|cni.*|kube-ipvs.*|dummy.*|virbr.*|veth.*)$/;

export function autodetectIpv4(method = 'first-found', interfaces = networkInterfaces()): DetectedAddress {
  let match: (name: string) => boolean;
  if (method === 'first-found') match = (n) => !SKIP.test(n);
  else if (method.startsWith('interface=')) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${method.slice('interface='.length)})$`);
    } catch (e) {
      throw new Error(`ipAutodetectionMethod: ${JSON.stringify(method)} is not a valid regular expression (${(e as Error).message})`);
    }
    match = (n) => re.test(n);
  } else {
    throw new Error(`ipAutodetectionMethod: ${JSON.stringify(method)}: use first-found or interface=<regex>`);
  }
  for (const name of Object.keys(interfaces).sort()) {
    if (!match(name)) continue;
    for (const a of interfaces[name] ?? []) {
      if (a.family === 'IPv4' && !a.internal && a.cidr) return { cidr: a.cidr, interface: name };
    }
  }
  throw new Error(
    `ipAutodetectionMethod ${method}: no interface with an IPv4 address matched (interfaces: ${Object.keys(interfaces).join(', ') || 'none'})`,
  );
}

/** The interface holding `address` (the uplink for routes without encapsulation). */
export function interfaceOf(address: string, interfaces = networkInterfaces()): string | undefined {
  const ip = address.split('/')[0];
  for (const [name, list] of Object.entries(interfaces)) {
    if ((list ?? []).some((a) => a.address === ip)) return name;
  }
  return undefined;
}

/**
 * The node's address as the agent needs it: IPv4 with its subnet's prefix length (10.0.1.5/24),
 * which says which next hops are on the node's own subnet. Throws naming `field`.
 */
export function checkNodeAddress(text: string, field = 'ipv4Address'): void {
  let family: number;
  try {
    family = parseCidr(text, field, false).family;
  } catch (e) {
    if (!(e instanceof AddressError)) throw e;
    throw new Error(`${field}: ${JSON.stringify(text)} is not an address with a prefix length (e.g. 10.0.0.1/24)`);
  }
  if (family !== 4 || !text.includes('/')) {
    throw new Error(
      family !== 4
        ? `${field}: ${JSON.stringify(text)} is not an IPv4 address`
        : `${field}: ${JSON.stringify(text)} is not an address with a prefix length (e.g. 10.0.0.1/24)`,
    );
  }
}
