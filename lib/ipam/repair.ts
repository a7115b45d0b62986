// `podroute ipam repair`: rebuilds every IPAMBlock and IPAMHandle from who holds the addresses
// (WorkloadEndpoints, and Nodes' VXLAN tunnel addresses), replaces them in one atomic step,
// then marks the store repaired so the identity guard lets allocation resume. The source is
// the datastore's WorkloadEndpoints: after a store came back empty, each node agent writes
// back its own (lib/agent/store-loss.ts) before anyone repairs.
import { addressValue, cidrContains, cidrNetwork, familyBits, formatCidr, parseAddress, parseCidr } from '../../ip/index.js';
import type { BackendDatastore, StoreIdentity, RestoredBlock } from '../datastore/index.js';
import { cidrName, API_VERSION, type IPAMBlock, type IPAMHandle } from '../resources/index.js';
import { hostAffinity } from './block.js';
import { holders, type Holder } from './check.js';

export interface IpamRepairReport {
  blocks: { cidr: string; affinity: string | null; addresses: number }[];
  handles: number;
  addresses: number;
  /** An address two holders claim: the first (by name) keeps it; the other needs a new one. */
  conflicts: { ip: string; kept: string; dropped: string }[];
  /** Held addresses no IPPool contains: left out. */
  outsidePools: { ip: string; holder: string }[];
  identity: StoreIdentity;
}

export async function repairIpam(ds: BackendDatastore): Promise<IpamRepairReport> {
  const [pools, weps, nodes, oldBlocks] = await Promise.all([
    ds.list('IPPool'),
    ds.list('WorkloadEndpoint'),
    ds.list('Node'),
    ds.list('IPAMBlock'),
  ]);
  const oldAffinity = new Map(oldBlocks.items.map((b) => [b.spec.cidr, b.spec.affinity]));
  const nodeNames = new Set(nodes.items.map((n) => n.metadata.name));
  const report: Omit<IpamRepairReport, 'identity'> = { blocks: [], handles: 0, addresses: 0, conflicts: [], outsidePools: [] };
  const byIp = new Map<string, Holder>();
  const sorted = holders(weps.items, nodes.items).sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : 0));
  const byBlock = new Map<string, { pool: string; holders: Holder[] }>();
  for (const h of sorted) {
    const first = byIp.get(h.ip);
    if (first) {
      report.conflicts.push({ ip: h.ip, kept: first.holder, dropped: h.holder });
      continue;
    }
    const addr = parseAddress(h.ip);
    const pool = pools.items.find((p) => cidrContains(parseCidr(p.spec.cidr, 'spec.cidr'), addr));
    if (!pool) {
      report.outsidePools.push({ ip: h.ip, holder: h.holder });
      continue;
    }
    byIp.set(h.ip, h);
    const block = formatCidr(cidrNetwork(parseCidr(`${h.ip}/${pool.spec.blockSize}`, 'ip', false)));
    const entry = byBlock.get(block) ?? { pool: pool.metadata.name, holders: [] };
    entry.holders.push(h);
    byBlock.set(block, entry);
  }

  const restored: RestoredBlock[] = [];
  const handles = new Map<string, Record<string, number>>();
  for (const [cidr, { pool, holders: hs }] of [...byBlock].sort()) {
    const c = parseCidr(cidr, 'cidr');
    const size = 1 << (familyBits(c.family) - c.prefixLength);
    const base = addressValue(c.bytes);
    const allocations = new Array<number | null>(size).fill(null);
    const attributes: IPAMBlock['spec']['attributes'] = [];
    for (const h of hs) {
      allocations[Number(addressValue(parseAddress(h.ip).bytes) - base)] = attributes.length;
      attributes.push({ handle_id: h.handle, secondary: h.attrs });
      const counts = handles.get(h.handle) ?? {};
      counts[cidr] = (counts[cidr] ?? 0) + 1;
      handles.set(h.handle, counts);
    }
    // The affinity it had if that node still exists, else the existing node holding most of its addresses, else none.
    const before = oldAffinity.get(cidr);
    const live = hs.filter((h) => nodeNames.has(h.node));
    const affinity =
      before?.startsWith('host:') && nodeNames.has(before.slice(5)) ? before : live.length > 0 ? hostAffinity(mostCommonNode(live)) : null;
    const b: IPAMBlock = {
      apiVersion: API_VERSION,
      kind: 'IPAMBlock',
      metadata: { name: cidrName(cidr) },
      spec: {
        cidr,
        affinity,
        allocations,
        unallocated: allocations.flatMap((a, i) => (a === null ? [i] : [])),
        attributes,
        strictAffinity: false,
      },
    };
    restored.push({ name: cidrName(cidr), pool, json: JSON.stringify(b) });
    report.blocks.push({ cidr, affinity, addresses: hs.length });
    report.addresses += hs.length;
  }
  const handleObjects = [...handles].map(([name, block]) => {
    const h: IPAMHandle = { apiVersion: API_VERSION, kind: 'IPAMHandle', metadata: { name }, spec: { handleID: name, block } };
    return { name, json: JSON.stringify(h) };
  });
  report.handles = handleObjects.length;
  await ds.raw.ipamStore().restore(restored, handleObjects);
  return { ...report, identity: await ds.raw.markRepaired() };
}

function mostCommonNode(hs: readonly Holder[]): string {
  const n = new Map<string, number>();
  for (const h of hs) n.set(h.node, (n.get(h.node) ?? 0) + 1);
  return [...n].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
}

export function formatIpamRepair(r: IpamRepairReport): string {
  const lines = [`rebuilt ${r.blocks.length} blocks, ${r.handles} handles, ${r.addresses} addresses`];
  for (const b of r.blocks) lines.push(`block ${b.cidr} affinity ${b.affinity ?? '-'}: ${b.addresses} addresses`);
  for (const c of r.conflicts) lines.push(`conflict: ${c.ip} kept by ${c.kept}; ${c.dropped} holds it too and needs a new address`);
  for (const o of r.outsidePools) lines.push(`left out: ${o.ip} of ${o.holder} is in no IPPool`);
  lines.push(`store ${r.identity.storeId} marked repaired (epoch ${r.identity.epoch}): allocation may resume`);
  return `${lines.join('\n')}\n`;
}
