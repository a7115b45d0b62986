// `podroute ipam check`, after `calicoctl ipam check`: the allocations compared with who
// holds each address (WorkloadEndpoints, and Nodes for their VXLAN tunnel address).
import { parseInterfaceAddress, formatAddress } from '../../ip/index.js';
import {
  CONTAINER_ID_ANNOTATION,
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
  ok: boolean;
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
    for (const [annotation, handle] of [
      [VXLAN_ADDRESS_ANNOTATION, 'vxlan-tunnel-addr-'],
      [VXLAN_ADDRESS_V6_ANNOTATION, 'vxlan-v6-tunnel-addr-'],
    ] as const) {
      const ip = n.metadata.annotations?.[annotation];
      if (!ip) continue;
      out.push({
        ip: formatAddress(parseInterfaceAddress(ip, 'annotation')),
        holder: `Node ${n.metadata.name}`,
        node: n.metadata.name,
        handle: `${handle}${n.metadata.name}`,
        attrs: { type: 'vxlanTunnelAddress', node: n.metadata.name },
      });
    }
  }
  return out;
}

export function checkIpam(blocks: readonly IPAMBlock[], weps: readonly WorkloadEndpoint[], nodes: readonly Node[]): IpamCheckReport {
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
  report.ok = report.leaked.length + report.doublyHeld.length + report.orphaned.length + report.staleAffinity.length === 0;
  return report;
}

export function formatIpamCheck(r: IpamCheckReport): string {
  const lines = [`${r.addresses} addresses allocated`];
  for (const l of r.leaked) lines.push(`leaked: ${l.ip} in block ${l.block} (handle ${l.handle ?? '-'}) is held by nothing`);
  for (const d of r.doublyHeld) lines.push(`doubly held: ${d.ip} by ${d.holders.join(' and ')}`);
  for (const o of r.orphaned) lines.push(`orphaned: ${o.ip} of ${o.holder} is not allocated in any block`);
  for (const s of r.staleAffinity) lines.push(`stale affinity: block ${s.block} is affine to node ${s.node}, which does not exist`);
  lines.push(r.ok ? 'no problems found' : 'problems found: `podroute ipam repair` rebuilds the allocations from the holders');
  return `${lines.join('\n')}\n`;
}
