// The node's address, found the way calico/node's IP_AUTODETECTION_METHOD does it:
// "first-found" (the first address of the family on a non-loopback interface) or
// "interface=<regex>" (the first on an interface whose name matches); IPv6 likewise
// (IP6_AUTODETECTION_METHOD), skipping link-local addresses.
import { networkInterfaces } from 'node:os';
import { AddressError, cidrAddress, parseCidr } from '../../ip/index.js';

export interface DetectedAddress {
  /** Address with prefix length, e.g. 10.0.1.5/24. */
  cidr: string;
  interface: string;
}

const SKIP = /^(lo|cali.*|vxlan.*|tunl.*|docker.*|cni.*|kube-ipvs.*|dummy.*|virbr.*|veth.*)$/;

export function autodetectIpv4(method = 'first-found', interfaces = networkInterfaces()): DetectedAddress {
  return autodetect(4, method, interfaces);
}

/** IP6_AUTODETECTION_METHOD: as for IPv4, the first global IPv6 address (link-local ones never). */
export function autodetectIpv6(method = 'first-found', interfaces = networkInterfaces()): DetectedAddress {
  return autodetect(6, method, interfaces);
}

function autodetect(family: 4 | 6, method: string, interfaces: ReturnType<typeof networkInterfaces>): DetectedAddress {
  const field = family === 4 ? 'ipAutodetectionMethod' : 'ip6AutodetectionMethod';
  let match: (name: string) => boolean;
  if (method === 'first-found') match = (n) => !SKIP.test(n);
  else if (method.startsWith('interface=')) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${method.slice('interface='.length)})$`);
    } catch (e) {
      throw new Error(`${field}: ${JSON.stringify(method)} is not a valid regular expression (${(e as Error).message})`);
    }
    match = (n) => re.test(n);
  } else {
    throw new Error(`${field}: ${JSON.stringify(method)}: use first-found or interface=<regex>`);
  }
  const wanted = family === 4 ? 'IPv4' : 'IPv6';
  for (const name of Object.keys(interfaces).sort()) {
    if (!match(name)) continue;
    for (const a of interfaces[name] ?? []) {
      // A link-local address names no node beyond its link: not a BGP next hop for the cluster.
      if (family === 6 && /^fe[89ab]/i.test(a.address)) continue;
      if (a.family === wanted && !a.internal && a.cidr) return { cidr: a.cidr, interface: name };
    }
  }
  throw new Error(
    `${field} ${method}: no interface with an ${wanted} address matched (interfaces: ${Object.keys(interfaces).join(', ') || 'none'})`,
  );
}

/** The interface holding `address` (the uplink for routes without encapsulation). */
export function interfaceOf(address: string, interfaces = networkInterfaces()): string | undefined {
  const ip = cidrAddress(address);
  for (const [name, list] of Object.entries(interfaces)) {
    if ((list ?? []).some((a) => a.address === ip)) return name;
  }
  return undefined;
}

/**
 * `address` with a prefix length: as written when it has one, else the length of the local
 * interface address it is (a Node may carry a bare address); undefined when no interface holds it.
 */
export function withPrefixLength(address: string, interfaces = networkInterfaces()): string | undefined {
  if (address.includes('/')) return address;
  const want = address.toLowerCase();
  for (const list of Object.values(interfaces)) {
    for (const a of list ?? []) if (a.address.toLowerCase() === want && a.cidr) return a.cidr;
  }
  return undefined;
}

/**
 * The node's address as the agent needs it: with its subnet's prefix length (10.0.1.5/24,
 * fd00:1::5/64), which says which next hops are on the node's own subnet. Throws naming `field`.
 */
export function checkNodeAddress(text: string, field = 'ipv4Address', want: 4 | 6 = 4): void {
  const example = want === 4 ? '10.0.0.1/24' : 'fd00::1/64';
  let family: number;
  try {
    family = parseCidr(text, field, false).family;
  } catch (e) {
    if (!(e instanceof AddressError)) throw e;
    throw new Error(`${field}: ${JSON.stringify(text)} is not an address with a prefix length (e.g. ${example})`);
  }
  if (family !== want || !text.includes('/')) {
    throw new Error(
      family !== want
        ? `${field}: ${JSON.stringify(text)} is not an IPv${want} address`
        : `${field}: ${JSON.stringify(text)} is not an address with a prefix length (e.g. ${example})`,
    );
  }
}
