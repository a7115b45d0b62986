// The desired routes and neighbours: a pure function of FelixInput. Route classes follow
// Calico: workload /32 on the cali device, blackhole per own block, remote blocks direct,
// over tunl0 or over vxlan.calico depending on the pool's mode and the next hop's subnet.

import {
  AddressError,
  cidrAddress,
  cidrContains,
  formatAddress,
  formatCidr,
  hostPrefix,
  parseAddress,
  parseCidr,
  parseInterfaceAddress,
  type Cidr,
  type IpFamily,
} from '../ip/index.js';
import {
  DEFAULT_DEVICE_NAMES,
  type DeviceNames,
  type EncapMode,
  type FelixInput,
  type LocalWorkload,
  type PoolConfig,
  type RemoteRoute,
} from './input.js';
import { sortNextHops, type Neighbor, type NextHop, type Route } from './model.js';
import { NextHopResolver, type KernelRoute, type Resolution } from './resolve.js';

export interface DesiredState {
  /** Sorted by destination. */
  readonly routes: readonly Route[];
  readonly neighbors: readonly Neighbor[];
  /** Devices the routes need: felix creates or checks these before writing routes. */
  readonly devices: { readonly ipip: boolean; readonly vxlanV4: boolean; readonly vxlanV6: boolean };
  /** Input that was consistent but could not be fully honoured, one line each. */
  readonly problems: readonly string[];
  /** Learned and static routes with no usable next hop (so not programmed), by destination, with why. */
  readonly unresolved: readonly { readonly dst: string; readonly reason: string }[];
}

export class FelixInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = 'FelixInputError';
  }
}

const MODES: readonly EncapMode[] = ['Never', 'Always', 'CrossSubnet'];

export interface ParsedPool {
  readonly cidr: Cidr;
  readonly text: string;
  readonly encap: 'ipip' | 'vxlan' | 'none';
  readonly mode: EncapMode;
}

function parsePool(p: PoolConfig, i: number): ParsedPool {
  const field = `pools[${i}]`;
  if (!p || typeof p !== 'object') throw new FelixInputError(field, 'must be an object');
  const cidr = wrap(() => parseCidr(p.cidr, `${field}.cidr`));
  const ipip = p.ipipMode ?? 'Never',
    vxlan = p.vxlanMode ?? 'Never';
  if (!MODES.includes(ipip)) throw new FelixInputError(`${field}.ipipMode`, `must be one of ${MODES.join(', ')}`);
  if (!MODES.includes(vxlan)) throw new FelixInputError(`${field}.vxlanMode`, `must be one of ${MODES.join(', ')}`);
  if (ipip !== 'Never' && vxlan !== 'Never') throw new FelixInputError(field, 'ipipMode and vxlanMode cannot both be enabled on one pool');
  if (ipip !== 'Never' && cidr.family === 6)
    throw new FelixInputError(`${field}.ipipMode`, 'IPIP carries IPv4 only; use vxlanMode for an IPv6 pool');
  const encap = vxlan !== 'Never' ? 'vxlan' : ipip !== 'Never' ? 'ipip' : 'none';
  return { cidr, text: formatCidr(cidr), encap, mode: encap === 'vxlan' ? vxlan : ipip };
}

function wrap<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof AddressError) throw new FelixInputError(e.field, e.message.slice(e.field.length + 2));
    throw e;
  }
}

function checkIface(name: unknown, field: string): string {
  // Linux: at most 15 bytes, no '/', no whitespace, not "." or "..".
  if (typeof name !== 'string' || !/^[^\s/:]{1,15}$/.test(name) || name === '.' || name === '..')
    throw new FelixInputError(field, `${JSON.stringify(name)} is not a valid interface name (1-15 characters, no spaces, '/' or ':')`);
  return name;
}

function macOk(mac: unknown): mac is string {
  return typeof mac === 'string' && /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(mac);
}

/**
 * What every route depends on besides its own input: the node, the pools, the remote VTEPs
 * and the device names. Validated once; a route computed against it needs nothing else.
 */
export interface DesiredContext {
  readonly names: DeviceNames;
  readonly uplink: string;
  readonly subnets: ReadonlyMap<IpFamily, Cidr>;
  /** This node's own addresses as host prefixes: next hops to skip. */
  readonly selfAddrs: ReadonlySet<string>;
  readonly pools: readonly ParsedPool[];
  readonly vteps: ReadonlyMap<string, { vtepIp: string; vtepMac: string; family: IpFamily; nodeIp: string }>;
  readonly devices: DesiredState['devices'];
  readonly neighbors: readonly Neighbor[];
  /** The node's own routes (its table and the static routes), for next hops off its subnet. */
  readonly resolver: NextHopResolver;
  /** Static routes by destination: the route, or why there is none. */
  readonly statics: ReadonlyMap<string, { readonly route?: Route; readonly problem?: string }>;
}

export type ContextInput = Pick<FelixInput, 'node' | 'pools' | 'remoteVteps' | 'deviceNames' | 'staticRoutes' | 'kernelRoutes'>;

/** Validates the node, pools, VTEPs and device names of an input (FelixInputError naming the field). */
export function desiredContext(input: ContextInput): DesiredContext {
  if (!input || typeof input !== 'object') throw new FelixInputError('input', 'must be an object');
  const names: DeviceNames = { ...DEFAULT_DEVICE_NAMES, ...(input.deviceNames ?? {}) };
  const node = input.node;
  if (!node || typeof node !== 'object') throw new FelixInputError('node', 'must be an object');
  const uplink = checkIface(node.uplink, 'node.uplink');
  const subnets = new Map<IpFamily, Cidr>();
  const selfAddrs = new Set<string>();
  for (const [field, text, fam] of [
    ['node.addressV4', node.addressV4, 4],
    ['node.addressV6', node.addressV6, 6],
  ] as const) {
    if (text === undefined) continue;
    const c = wrap(() => parseInterfaceAddress(text, field));
    if (c.family !== fam) throw new FelixInputError(field, `must be an IPv${fam} address with its subnet length`);
    selfAddrs.add(hostPrefix(cidrAddress(text, field)));
    subnets.set(fam, c);
  }
  for (const [field, text, fam] of [
    ['node.vxlanTunnelAddressV4', node.vxlanTunnelAddressV4, 4],
    ['node.vxlanTunnelAddressV6', node.vxlanTunnelAddressV6, 6],
    ['node.ipipTunnelAddress', node.ipipTunnelAddress, 4],
  ] as const) {
    if (text === undefined) continue;
    const a = wrap(() => parseInterfaceAddress(text, field));
    if (a.family !== fam) throw new FelixInputError(field, `must be an IPv${fam} address`);
  }
  for (const [field, mac] of [
    ['node.vxlanTunnelMacV4', node.vxlanTunnelMacV4],
    ['node.vxlanTunnelMacV6', node.vxlanTunnelMacV6],
  ] as const) {
    if (mac !== undefined && !macOk(mac))
      throw new FelixInputError(field, `${JSON.stringify(mac)} is not a MAC address (aa:bb:cc:dd:ee:ff)`);
  }
  const pools = list(input.pools, 'pools').map(parsePool);

  const vteps = new Map<string, { vtepIp: string; vtepMac: string; family: IpFamily; nodeIp: string }>();
  list(input.remoteVteps, 'remoteVteps').forEach((v, i) => {
    const f = `remoteVteps[${i}]`;
    const n = wrap(() => parseAddress(v?.nodeIp, `${f}.nodeIp`));
    const t = wrap(() => parseAddress(v.vtepIp, `${f}.vtepIp`));
    if (n.family !== t.family) throw new FelixInputError(f, 'nodeIp and vtepIp must be of the same IP family');
    if (!macOk(v.vtepMac))
      throw new FelixInputError(`${f}.vtepMac`, `${JSON.stringify(v.vtepMac)} is not a MAC address (aa:bb:cc:dd:ee:ff)`);
    const nodeIp = formatAddress(n.bytes);
    vteps.set(nodeIp, { vtepIp: formatAddress(t.bytes), vtepMac: v.vtepMac.toLowerCase(), family: n.family, nodeIp });
  });

  const devices = { ipip: false, vxlanV4: false, vxlanV6: false };
  for (const p of pools) {
    if (p.encap === 'ipip') devices.ipip = true;
    if (p.encap === 'vxlan') devices[p.cidr.family === 4 ? 'vxlanV4' : 'vxlanV6'] = true;
  }

  const neighbors: Neighbor[] = [];
  for (const v of [...vteps.values()].sort((a, b) => (a.nodeIp < b.nodeIp ? -1 : 1))) {
    if (selfAddrs.has(hostPrefix(v.nodeIp))) continue;
    const dev = v.family === 4 ? names.vxlanV4 : names.vxlanV6;
    if (!(v.family === 4 ? devices.vxlanV4 : devices.vxlanV6)) continue;
    neighbors.push({ kind: 'arp', dev, address: v.vtepIp, mac: v.vtepMac });
    neighbors.push({ kind: 'fdb', dev, address: v.nodeIp, mac: v.vtepMac });
  }
  const kernel = list(input.kernelRoutes, 'kernelRoutes').map((r, i) => checkKernelRoute(r, `kernelRoutes[${i}]`));
  const base = { names, uplink, subnets, selfAddrs, pools, vteps, devices, neighbors };
  const under = new NextHopResolver(kernel);
  const statics = new Map<string, { route?: Route; problem?: string }>();
  list(input.staticRoutes, 'staticRoutes').forEach((r, i) => {
    const f = `staticRoutes[${i}]`;
    const dst = formatCidr(wrap(() => parseCidr(r?.prefix, `${f}.prefix`)));
    const via = wrap(() => parseAddress(r.via, `${f}.via`));
    if (via.family !== (dst.includes(':') ? 6 : 4)) throw new FelixInputError(`${f}.via`, `${r.via} is not of the prefix's IP family`);
    if (statics.has(dst)) return; // the first wins, as for learned routes
    const found = underlay({ ...base, resolver: under }, via.bytes.length === 4 ? 4 : 6, formatAddress(via.bytes));
    statics.set(
      dst,
      'hops' in found
        ? { route: { dst, type: 'unicast', nextHops: sortNextHops(found.hops), reason: 'direct' } }
        : { problem: `${dst}: static route via ${formatAddress(via.bytes)}: ${found.reason}` },
    );
  });
  // Learned next hops resolve through the static routes too (a peer reached by reachableBy is
  // often the next hop of what it sends), but a static route never through another.
  const withStatics = [...statics.values()].flatMap((s) => (s.route ? [s.route] : []));
  const resolver = withStatics.length ? new NextHopResolver([...kernel, ...withStatics]) : under;
  return { ...base, resolver, statics };
}

function checkKernelRoute(r: KernelRoute, field: string): KernelRoute {
  if (!r || typeof r !== 'object') throw new FelixInputError(field, 'must be an object');
  wrap(() => parseCidr(r.dst, `${field}.dst`, false));
  if (r.type !== 'unicast' && r.type !== 'blackhole') throw new FelixInputError(`${field}.type`, 'must be unicast or blackhole');
  list(r.nextHops, `${field}.nextHops`);
  return r;
}

/**
 * The hops towards a gateway that is not reached through a tunnel: on the node's subnet through
 * the uplink, as always; else through the node's routing table (resolve.ts).
 */
function underlay(ctx: Pick<DesiredContext, 'subnets' | 'uplink' | 'resolver'>, family: IpFamily, gw: string): Resolution {
  const subnet = ctx.subnets.get(family);
  if (subnet !== undefined && cidrContains(subnet, parseAddress(gw)))
    return { hops: [{ dev: ctx.uplink, gateway: gw }], connected: true, via: formatCidr(subnet) };
  return ctx.resolver.resolve(gw);
}

/** A local workload's host routes: its canonical destinations and the one next hop they share. */
export function workloadRoutes(w: LocalWorkload, field: string): { dev: string; dsts: string[]; nextHops: readonly NextHop[] } {
  const dev = checkIface(w?.iface, `${field}.iface`);
  const nextHops: readonly NextHop[] = Object.freeze([Object.freeze({ dev })]); // shared by the workload's routes
  const dsts = list(w.addresses, `${field}.addresses`).map((a, j) => {
    try {
      return hostPrefix(a);
    } catch {
      return wrap(() => hostPrefix(a, `${field}.addresses[${j}]`)); // throws, naming the field
    }
  });
  return { dev, dsts, nextHops };
}

/** The canonical destination of a learned route (FelixInputError naming the field). */
export function remoteDestination(r: RemoteRoute, field: string): { prefix: Cidr; dst: string } {
  const prefix = wrap(() => parseCidr(r?.prefix, `${field}.prefix`));
  return { prefix, dst: formatCidr(prefix) };
}

/**
 * The route for a learned prefix, given the context: direct, over tunl0 or over the VXLAN
 * device per the pool's mode and the next hop's subnet. None when no next hop is usable.
 */
export function remoteRoute(
  ctx: DesiredContext,
  r: RemoteRoute,
  field: string,
  problems: string[],
  at: { prefix: Cidr; dst: string } = remoteDestination(r, field),
): Route | undefined {
  const { prefix, dst } = at;
  const { names } = ctx;
  const pool = longestPool(ctx.pools, prefix);
  const hops: NextHop[] = [];
  for (const [j, h] of list(r.nextHops, `${field}.nextHops`).entries()) {
    const direct = typeof h === 'string' ? undefined : h;
    const a = wrap(() => parseAddress(direct ? direct.address : (h as string), `${field}.nextHops[${j}]${direct ? '.address' : ''}`));
    const gw = formatAddress(a.bytes);
    if (a.family !== prefix.family) throw new FelixInputError(`${field}.nextHops[${j}]`, `${gw} is not of the prefix's IP family`);
    const peer = direct && wrap(() => parseAddress(direct.peer, `${field}.nextHops[${j}].peer`));
    if (peer && peer.family !== a.family)
      throw new FelixInputError(`${field}.nextHops[${j}].peer`, `${direct.peer} is not of the prefix's IP family`);
    if (ctx.selfAddrs.has(`${gw}/${a.family === 4 ? 32 : 128}`)) continue; // our own announcement echoed back
    const subnet = ctx.subnets.get(a.family);
    const local = subnet !== undefined && cidrContains(subnet, a);
    const encap = pool && pool.encap !== 'none' && (pool.mode === 'Always' || !local) ? pool.encap : 'none';
    if (encap === 'vxlan') {
      const v = ctx.vteps.get(gw);
      if (!v) {
        problems.push(`${dst}: no VXLAN VTEP known for next hop ${gw}; next hop skipped`);
        continue;
      }
      hops.push({ dev: a.family === 4 ? names.vxlanV4 : names.vxlanV6, gateway: v.vtepIp, onlink: true });
    } else if (encap === 'ipip') {
      hops.push({ dev: names.ipip, gateway: gw, onlink: true });
    } else if (local && !peer) {
      hops.push({ dev: ctx.uplink, gateway: gw }); // the common case, as before: no lookup
    } else {
      let found = underlay(ctx, a.family, gw);
      if (peer && !('hops' in found && found.connected)) {
        // Direct mode: the peer that sent it is the gateway when the next hop is not connected.
        const viaPeer = underlay(ctx, a.family, formatAddress(peer.bytes));
        if ('hops' in viaPeer && viaPeer.connected) found = viaPeer;
      }
      if (!('hops' in found)) {
        problems.push(`${dst}: ${found.reason}; next hop skipped`);
        continue;
      }
      hops.push(...found.hops);
    }
  }
  const unique = dedupe(hops);
  if (unique.length === 0) return undefined;
  const tunnel = unique.find((h) => h.dev === names.ipip || h.dev === names.vxlanV4 || h.dev === names.vxlanV6);
  const reason = !tunnel ? 'direct' : tunnel.dev === names.ipip ? 'ipip' : 'vxlan';
  return { dst, type: 'unicast', nextHops: sortNextHops(unique), reason };
}

/** The canonical form of an own block (FelixInputError naming the field). */
export function ownBlock(b: string, field: string): string {
  return wrap(() => formatCidr(parseCidr(b, field)));
}

/** Every route and neighbour from scratch: the reference the incremental table is held to. */
export function computeDesiredState(input: FelixInput): DesiredState {
  const ctx = desiredContext(input);
  const problems: string[] = [];
  const routes = new Map<string, Route>();

  // Local workloads first: a pod on this host always wins over anything learned.
  list(input.workloads, 'workloads').forEach((w, i) => {
    const { dev, dsts, nextHops } = workloadRoutes(w, `workloads[${i}]`);
    for (const dst of dsts) {
      const had = routes.get(dst);
      if (had) {
        problems.push(`workload address ${dst} is on both ${had.nextHops[0].dev} and ${dev}; keeping ${had.nextHops[0].dev}`);
        continue;
      }
      routes.set(dst, { dst, type: 'unicast', nextHops, reason: 'workload' });
    }
  });

  const ownBlocks = list(input.ownBlocks, 'ownBlocks').map((b, i) => ownBlock(b, `ownBlocks[${i}]`));
  for (const dst of ownBlocks) {
    if (!routes.has(dst)) routes.set(dst, { dst, type: 'blackhole', nextHops: [], reason: 'blackhole' });
  }

  const unresolved = new Map<string, string>();
  // Static routes next: the node needs them to reach its peers, whatever the peers send.
  const staticDsts = new Set<string>();
  for (const [dst, s] of ctx.statics) {
    if (routes.has(dst)) continue;
    staticDsts.add(dst);
    if (s.route) routes.set(dst, s.route);
    else {
      problems.push(s.problem!);
      unresolved.set(dst, s.problem!);
    }
  }

  const learned = new Set<string>();
  list(input.remoteRoutes, 'remoteRoutes').forEach((r, i) => {
    const f = `remoteRoutes[${i}]`;
    const at = remoteDestination(r, f);
    if (routes.has(at.dst) || staticDsts.has(at.dst)) {
      if (learned.has(at.dst)) problems.push(`${f}: ${at.dst} given twice; keeping the first`);
      else remoteRoute(ctx, r, f, [], at); // validates its next hops
      return; // a local pod, our own block or a static route: not the learned one
    }
    const own: string[] = [];
    const route = remoteRoute(ctx, r, f, own, at);
    problems.push(...own);
    if (route) {
      routes.set(at.dst, route);
      learned.add(at.dst);
      unresolved.delete(at.dst);
    } else if (own.length) unresolved.set(at.dst, own.join('; '));
  });

  const byDst = <T extends { dst: string }>(a: T, b: T) => (a.dst < b.dst ? -1 : a.dst > b.dst ? 1 : 0);
  const sorted = [...routes.values()].sort(byDst);
  return {
    routes: sorted,
    neighbors: ctx.neighbors,
    devices: ctx.devices,
    problems,
    unresolved: [...unresolved].map(([dst, reason]) => ({ dst, reason })).sort(byDst),
  };
}

/** The routes alone, for callers that only want the table. */
export function computeDesiredRoutes(input: FelixInput): readonly Route[] {
  return computeDesiredState(input).routes;
}

function list<T>(v: readonly T[] | undefined, field: string): readonly T[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new FelixInputError(field, 'must be an array');
  return v;
}

function longestPool(pools: readonly ParsedPool[], prefix: Cidr): ParsedPool | undefined {
  let best: ParsedPool | undefined;
  for (const p of pools) if (cidrContains(p.cidr, prefix) && (!best || p.cidr.prefixLength > best.cidr.prefixLength)) best = p;
  return best;
}

function dedupe(hops: NextHop[]): NextHop[] {
  const seen = new Set<string>();
  return hops.filter((h) => {
    const k = `${h.dev}|${h.gateway}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
