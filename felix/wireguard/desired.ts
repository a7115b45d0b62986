// The WireGuard state a node wants, per family, from WireguardInput alone (pure): its device,
// one peer per other node that published a key (endpoint its underlay address and port, allowed
// IPs its blocks and device address), a route in the WireGuard table for each of those prefixes
// through the device, and the rule that sends everything not already encrypted to that table.
// A node with no key in a family gets no peer and no route: the main table reaches it in clear.
import { canonicalCidr, cidrAddress, hostPrefix } from '../../ip/index.js';
import type { ResolvedWireguardSettings, WireguardInput, WireguardLocal, WireguardPeer } from './input.js';
import { isWireguardKey, wireguardPublicKey } from './keys.js';

export type WireguardFamily = 4 | 6;

export interface WireguardDeviceSpec {
  readonly family: WireguardFamily;
  readonly name: string;
  readonly port: number;
  readonly mtu: number;
  readonly fwmark: number;
  readonly privateKey: string;
  /** The device's own address as a host prefix, when IPAM gave it one. */
  readonly address?: string;
}

export interface WireguardPeerSpec {
  readonly publicKey: string;
  /** "10.0.0.2:51820" or "[fd00::2]:51821". */
  readonly endpoint: string;
  /** Canonical prefixes, sorted. */
  readonly allowedIps: readonly string[];
  readonly keepAliveSeconds: number;
}

/** A route of the WireGuard table: the prefix through the device. */
export interface WireguardRoute {
  readonly dst: string;
  readonly dev: string;
}

/** `not fwmark <mark>/<mark> lookup <table>` at a priority: what the device sent itself goes on to main. */
export interface WireguardRule {
  readonly family: WireguardFamily;
  readonly priority: number;
  readonly table: number;
  readonly fwmark: number;
}

export interface WireguardFamilyState {
  readonly device: WireguardDeviceSpec;
  /** By public key, sorted. */
  readonly peers: readonly WireguardPeerSpec[];
  /** Sorted by destination. */
  readonly routes: readonly WireguardRoute[];
  readonly rule: WireguardRule;
}

export interface WireguardState {
  /** Absent: that family has no device (and one left from before is removed). */
  readonly v4?: WireguardFamilyState;
  readonly v6?: WireguardFamilyState;
  /** Nodes left out and why, one line each. */
  readonly problems: readonly string[];
}

export function computeWireguardState(input: WireguardInput | undefined, s: ResolvedWireguardSettings): WireguardState {
  const problems: string[] = [];
  if (!input) return { problems };
  const v4 = input.v4 && familyState(4, input.v4, input.peers, s, problems);
  const v6 = input.v6 && familyState(6, input.v6, input.peers, s, problems);
  return { ...(v4 ? { v4 } : {}), ...(v6 ? { v6 } : {}), problems };
}

function familyState(
  family: WireguardFamily,
  local: WireguardLocal,
  peers: readonly WireguardPeer[],
  s: ResolvedWireguardSettings,
  problems: string[],
): WireguardFamilyState | undefined {
  const name = family === 4 ? s.interfaceName : s.interfaceNameV6;
  let ownKey: string;
  try {
    ownKey = wireguardPublicKey(local.privateKey);
  } catch {
    problems.push(`${name}: the private key is not base64 of 32 bytes; no IPv${family} WireGuard`);
    return undefined;
  }
  const port = family === 4 ? s.port : s.portV6;
  const address = local.interfaceAddress ? ownAddress(local.interfaceAddress, family, name, problems) : undefined;
  const device: WireguardDeviceSpec = {
    family,
    name,
    port,
    mtu: family === 4 ? s.mtu : s.mtuV6,
    fwmark: s.fwmark,
    privateKey: local.privateKey,
    ...(address ? { address } : {}),
  };

  // Candidates: peers with an address and a key of this family; a key held twice (or ours) is
  // no one's, since WireGuard could not tell the two apart: Calico leaves such nodes out too.
  const candidates: { peer: WireguardPeer; key: string; endpoint: string }[] = [];
  const holders = new Map<string, string[]>([[ownKey, ['this node']]]);
  for (const peer of [...peers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const key = family === 4 ? peer.publicKey : peer.publicKeyV6;
    const address = family === 4 ? peer.addressV4 : peer.addressV6;
    if (!key || !address) continue;
    if (!isWireguardKey(key)) {
      problems.push(`node ${peer.name}: its IPv${family} WireGuard public key is not base64 of 32 bytes; reached in clear`);
      continue;
    }
    let ip: string;
    try {
      ip = cidrAddress(address, `node ${peer.name} address`);
    } catch (e) {
      problems.push((e as Error).message);
      continue;
    }
    if (ip.includes(':') !== (family === 6)) continue;
    holders.set(key, [...(holders.get(key) ?? []), peer.name]);
    candidates.push({ peer, key, endpoint: family === 4 ? `${ip}:${port}` : `[${ip}]:${port}` });
  }
  for (const [key, who] of holders)
    if (who.length > 1)
      problems.push(
        `IPv${family} WireGuard public key ${key} is held by ${who.join(' and ')}; ${who.filter((w) => w !== 'this node').join(' and ')} reached in clear`,
      );

  // A prefix belongs to the first node (by name) that claims it: WireGuard routes one prefix to one peer.
  const claimed = new Map<string, string>();
  const out: WireguardPeerSpec[] = [];
  const routes: WireguardRoute[] = [];
  for (const { peer, key, endpoint } of candidates) {
    if (holders.get(key)?.length !== 1) continue;
    const allowed: string[] = [];
    const wanted = [...peer.blocks];
    const ifaceAddress = family === 4 ? peer.interfaceAddressV4 : peer.interfaceAddressV6;
    if (ifaceAddress) wanted.push(ifaceAddress);
    for (const p of wanted) {
      let prefix: string;
      try {
        prefix = p.includes('/') ? canonicalCidr(p, `node ${peer.name} prefix`) : hostPrefix(p, `node ${peer.name} address`);
      } catch (e) {
        problems.push((e as Error).message);
        continue;
      }
      if (prefix.includes(':') !== (family === 6)) continue;
      const owner = claimed.get(prefix);
      if (owner !== undefined) {
        if (owner !== peer.name) problems.push(`${prefix} is claimed by nodes ${owner} and ${peer.name}; it goes to ${owner}`);
        continue;
      }
      claimed.set(prefix, peer.name);
      allowed.push(prefix);
      routes.push({ dst: prefix, dev: name });
    }
    out.push({ publicKey: key, endpoint, allowedIps: allowed.sort(), keepAliveSeconds: s.keepAliveSeconds });
  }
  out.sort((a, b) => (a.publicKey < b.publicKey ? -1 : a.publicKey > b.publicKey ? 1 : 0));
  routes.sort((a, b) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0));
  return { device, peers: out, routes, rule: { family, priority: s.rulePriority, table: s.table, fwmark: s.fwmark } };
}

function ownAddress(address: string, family: WireguardFamily, name: string, problems: string[]): string | undefined {
  try {
    const p = hostPrefix(cidrAddress(address, `${name} address`), `${name} address`);
    if (p.includes(':') === (family === 6)) return p;
    problems.push(`${name}: ${address} is not an IPv${family} address; the device has none`);
  } catch (e) {
    problems.push((e as Error).message);
  }
  return undefined;
}
