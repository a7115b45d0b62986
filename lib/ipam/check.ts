// `podroute ipam check`, after `calicoctl ipam check`: the allocations compared with who
// holds each address (WorkloadEndpoints, and Nodes for their tunnel addresses); run on a
// node, also that node's endpoints compared with its kernel (the CNI plugin reads it).
import { parseInterfaceAddress, formatAddress } from '../../ip/index.js';
import {
  CONTAINER_ID_ANNOTATION,
  IPIP_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_V6_ANNOTATION,
  type IPAMBlock,
  type Node,
  type WorkloadEndpoint,
} from '../resources/index.js';
import { affinityNode, blockAllocations } from './block.js';

export interface IpamCheckReport {
  /** Allocated in a block, held by no WorkloadEndpoint or Node. */
  leaked: { ip: string; block: string; handle: string | null }[];
  /** Held by more than one WorkloadEndpoint (or a WorkloadEndpoint and a Node). */
  doublyHeld: { ip: string; holders: string[] }[];
  /** A WorkloadEndpoint's address that no block records as allocated. */
  orphaned: { ip: string; holder: string }[];
  /** Blocks whose affinity names a Node that does not exist. */
  staleAffinity: { block: string; node: string }[];
  addresses: number;
  /** One node's endpoints compared with its kernel, when the check ran where that kernel is. */
  kernel?: KernelCheck;
  ok: boolean;
}

/** What a node's kernel holds for one endpoint's host interface. */
export interface KernelEnd {
  /** The container the interface is marked as serving, when it is marked. */
  owner?: string;
  /** The global addresses on its pod end, as ip/len; undefined when that end could not be read from here. */
  podAddresses?: readonly string[];
}

export interface KernelCheck {
  node: string;
  /** That node's endpoints, compared. */
  endpoints: number;
  /** The endpoint names a host interface the kernel does not have. */
  missingInterface: { holder: string; interfaceName: string }[];
  /** The interface is marked as another container's: the endpoint's sandbox lost it to another. */
  otherOwner: { holder: string; interfaceName: string; container: string; owner: string }[];
  /** Addresses of the endpoint that are not on its interface's pod end. */
  missingAddresses: { holder: string; interfaceName: string; missing: string[]; has: string[] }[];
  /** Interfaces whose pod end is in a namespace this host has no name for: their addresses were not compared. */
  unread: { holder: string; interfaceName: string }[];
}

export interface Holder {
  ip: string;
  /** "WorkloadEndpoint ns/name" or "Node name". */
  holder: string;
  node: string;
  handle: string;
  attrs: Record<string, string>;
}

/** Every address someone holds, by what holds it. */
export function holders(weps: readonly WorkloadEndpoint[], nodes: readonly Node[]): Holder[] {
  const out: Holder[] = [];
  for (const w of weps) {
    for (const net of w.spec.ipNetworks) {
      out.push({
        ip: formatAddress(parseInterfaceAddress(net, 'spec.ipNetworks')),
        holder: `WorkloadEndpoint ${w.metadata.namespace}/${w.metadata.name}`,
        node: w.spec.node,
        handle: w.metadata.annotations?.[CONTAINER_ID_ANNOTATION] ?? w.spec.workload ?? `${w.metadata.namespace}.${w.metadata.name}`,
        attrs: { namespace: w.metadata.namespace ?? 'default', pod: w.spec.pod, node: w.spec.node },
      });
    }
  }
  for (const n of nodes) {
    for (const [annotation, handle, type] of [
      [VXLAN_ADDRESS_ANNOTATION, 'vxlan-tunnel-addr-', 'vxlanTunnelAddress'],
      [VXLAN_ADDRESS_V6_ANNOTATION, 'vxlan-v6-tunnel-addr-', 'vxlanTunnelAddress'],
      [IPIP_ADDRESS_ANNOTATION, 'ipip-tunnel-addr-', 'ipipTunnelAddress'],
    ] as const) {
      const ip = n.metadata.annotations?.[annotation];
      if (!ip) continue;
      out.push({
        ip: formatAddress(parseInterfaceAddress(ip, 'annotation')),
        holder: `Node ${n.metadata.name}`,
        node: n.metadata.name,
        handle: `${handle}${n.metadata.name}`,
        attrs: { type, node: n.metadata.name },
      });
    }
    // The WireGuard devices' addresses, which the Node keeps in spec.wireguard as Calico does.
    for (const [ip, handle] of [
      [n.spec.wireguard?.interfaceIPv4Address, 'wireguard-tunnel-addr-'],
      [n.spec.wireguard?.interfaceIPv6Address, 'wireguard-v6-tunnel-addr-'],
    ] as const) {
      if (!ip) continue;
      out.push({
        ip: formatAddress(parseInterfaceAddress(ip, 'spec.wireguard')),
        holder: `Node ${n.metadata.name}`,
        node: n.metadata.name,
        handle: `${handle}${n.metadata.name}`,
        attrs: { type: 'wireguardTunnelAddress', node: n.metadata.name },
      });
    }
  }
  return out;
}

const addressOf = (cidr: string): string => formatAddress(parseInterfaceAddress(cidr, 'address'));

/** `node`'s endpoints against what its kernel holds, by host interface name. */
export function checkKernel(weps: readonly WorkloadEndpoint[], node: string, ends: ReadonlyMap<string, KernelEnd>): KernelCheck {
  const out: KernelCheck = { node, endpoints: 0, missingInterface: [], otherOwner: [], missingAddresses: [], unread: [] };
  for (const w of weps) {
    if (w.spec.node !== node) continue;
    out.endpoints++;
    const holder = `WorkloadEndpoint ${w.metadata.namespace}/${w.metadata.name}`;
    const interfaceName = w.spec.interfaceName;
    const end = ends.get(interfaceName);
    if (!end) {
      out.missingInterface.push({ holder, interfaceName });
      continue;
    }
    const container = w.metadata.annotations?.[CONTAINER_ID_ANNOTATION] ?? w.spec.workload;
    if (end.owner !== undefined && container !== undefined && end.owner !== container) {
      out.otherOwner.push({ holder, interfaceName, container, owner: end.owner });
      continue;
    }
    if (end.podAddresses === undefined) {
      out.unread.push({ holder, interfaceName });
      continue;
    }
    const has = new Set(end.podAddresses.map(addressOf));
    const missing = w.spec.ipNetworks.filter((a) => !has.has(addressOf(a)));
    if (missing.length > 0) out.missingAddresses.push({ holder, interfaceName, missing, has: [...end.podAddresses] });
  }
  return out;
}

/**
 * `kernel`, when given, is what this host's kernel holds (by host interface name), and `node`
 * the Node whose kernel it is.
 */
export function checkIpam(
  blocks: readonly IPAMBlock[],
  weps: readonly WorkloadEndpoint[],
  nodes: readonly Node[],
  kernel?: { node: string; ends: ReadonlyMap<string, KernelEnd> },
): IpamCheckReport {
  const held = new Map<string, string[]>();
  for (const h of holders(weps, nodes)) held.set(h.ip, [...(held.get(h.ip) ?? []), h.holder]);
  const allocated = new Set<string>();
  const report: IpamCheckReport = { leaked: [], doublyHeld: [], orphaned: [], staleAffinity: [], addresses: 0, ok: true };
  const nodeNames = new Set(nodes.map((n) => n.metadata.name));
  for (const b of blocks) {
    for (const a of blockAllocations(b.spec)) {
      allocated.add(a.ip);
      report.addresses++;
      if (!held.has(a.ip)) report.leaked.push({ ip: a.ip, block: b.spec.cidr, handle: a.handle });
    }
    const node = affinityNode(b.spec);
    if (node !== undefined && !nodeNames.has(node)) report.staleAffinity.push({ block: b.spec.cidr, node });
  }
  for (const [ip, hs] of held) {
    if (hs.length > 1) report.doublyHeld.push({ ip, holders: hs });
    if (!allocated.has(ip)) for (const holder of hs) report.orphaned.push({ ip, holder });
  }
  if (kernel) report.kernel = checkKernel(weps, kernel.node, kernel.ends);
  const k = report.kernel;
  const inKernel = k ? k.missingInterface.length + k.otherOwner.length + k.missingAddresses.length : 0;
  report.ok = report.leaked.length + report.doublyHeld.length + report.orphaned.length + report.staleAffinity.length + inKernel === 0;
  return report;
}

export function formatIpamCheck(r: IpamCheckReport): string {
  const lines = [`${r.addresses} addresses allocated`];
  for (const l of r.leaked) lines.push(`leaked: ${l.ip} in block ${l.block} (handle ${l.handle ?? '-'}) is held by nothing`);
  for (const d of r.doublyHeld) lines.push(`doubly held: ${d.ip} by ${d.holders.join(' and ')}`);
  for (const o of r.orphaned) lines.push(`orphaned: ${o.ip} of ${o.holder} is not allocated in any block`);
  for (const s of r.staleAffinity) lines.push(`stale affinity: block ${s.block} is affine to node ${s.node}, which does not exist`);
  const k = r.kernel;
  if (k) {
    lines.push(`kernel: ${k.endpoints} endpoints of node ${k.node} compared with this host's interfaces`);
    for (const m of k.missingInterface)
      lines.push(`missing interface: ${m.holder} names ${m.interfaceName}, which this host does not have`);
    for (const o of k.otherOwner)
      lines.push(
        `interface of another sandbox: ${o.interfaceName} of ${o.holder} is marked as container ${o.owner}'s, not ${o.container}'s`,
      );
    for (const m of k.missingAddresses)
      lines.push(
        `missing addresses: ${m.holder}: ${m.missing.join(', ')} not on the pod end of ${m.interfaceName} (it has ${m.has.join(', ') || 'none'})`,
      );
    if (k.unread.length > 0)
      lines.push(
        `not compared: the pod ends of ${k.unread.map((u) => u.interfaceName).join(', ')} are in namespaces this host has no name for (ip netns)`,
      );
  }
  const allocation = r.leaked.length + r.doublyHeld.length + r.orphaned.length + r.staleAffinity.length > 0;
  const inKernel = k ? k.missingInterface.length + k.otherOwner.length + k.missingAddresses.length > 0 : false;
  if (r.ok) lines.push('no problems found');
  else {
    const fixes = [
      ...(allocation ? ['`podroute ipam repair` rebuilds the allocations from the holders'] : []),
      // The store is right about these; the pod's networking is what went, and only its runtime
      // can wire it again.
      ...(inKernel ? ["an endpoint the kernel lacks comes back when its pod's sandbox is recreated (CNI DEL and ADD)"] : []),
    ];
    lines.push(`problems found: ${fixes.join('; ')}`);
  }
  return `${lines.join('\n')}\n`;
}
