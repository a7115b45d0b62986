// This node's tunnel addresses: a VXLAN tunnel endpoint per family when an enabled pool of that
// family uses VXLAN (an address from IPAM, from one of the node's own blocks of that family, and a
// MAC derived from the node name), and tunl0's address when an enabled pool uses IPIP, all stored
// in the Node's annotations for felix here and on every other node (our Node spec has no field
// for them). The IPv6 endpoint needs the node's IPv6 address, since the other nodes reach it there
// (as Calico gives IPv6VXLANTunnelAddr only then).
import { createHash } from 'node:crypto';
import type { BackendDatastore } from '../datastore/index.js';
import {
  IPIP_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_ANNOTATION,
  VXLAN_ADDRESS_V6_ANNOTATION,
  VXLAN_MAC_ANNOTATION,
  VXLAN_MAC_V6_ANNOTATION,
  type IPPool,
  type Node,
} from '../resources/index.js';
import type { Ipam } from '../ipam/index.js';

/**
 * A locally administered unicast MAC derived from the node name (stable across restarts); the
 * IPv6 device gets its own, so the two devices of a dual-stack node are told apart on the wire.
 */
export function vtepMac(node: string, family: 4 | 6 = 4): string {
  const h = createHash('sha256')
    .update(family === 4 ? node : `${node}/v6`)
    .digest();
  return ['66', ...[...h.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

/** A tunnel address a node may need: its family, annotations, IPAM handle (Calico's spelling) and attrs type, log event. */
interface TunnelKind {
  family: 4 | 6;
  encap: 'vxlanMode' | 'ipipMode';
  address: string;
  mac?: string;
  handle: string;
  type: string;
  event: string;
}

const TUNNELS: readonly TunnelKind[] = [
  {
    family: 4,
    encap: 'vxlanMode',
    address: VXLAN_ADDRESS_ANNOTATION,
    mac: VXLAN_MAC_ANNOTATION,
    handle: 'vxlan-tunnel-addr-',
    type: 'vxlanTunnelAddress',
    event: 'vxlan-tunnel-address',
  },
  {
    family: 6,
    encap: 'vxlanMode',
    address: VXLAN_ADDRESS_V6_ANNOTATION,
    mac: VXLAN_MAC_V6_ANNOTATION,
    handle: 'vxlan-v6-tunnel-addr-',
    type: 'vxlanTunnelAddress',
    event: 'vxlan-v6-tunnel-address',
  },
  {
    family: 4,
    encap: 'ipipMode',
    address: IPIP_ADDRESS_ANNOTATION,
    handle: 'ipip-tunnel-addr-',
    type: 'ipipTunnelAddress',
    event: 'ipip-tunnel-address',
  },
];
const [VXLAN_V4, VXLAN_V6, IPIP] = TUNNELS as [TunnelKind, TunnelKind, TunnelKind];

/** The IPAM handle of a node's VTEP address of one family. */
export function vtepHandle(node: string, family: 4 | 6 = 4): string {
  return `${(family === 4 ? VXLAN_V4 : VXLAN_V6).handle}${node}`;
}

/** The IPAM handle of a node's tunl0 address. */
export function ipipHandle(node: string): string {
  return `${IPIP.handle}${node}`;
}

export interface VtepAllocatorOptions {
  nodeName: string;
  datastore: BackendDatastore;
  ipam: Ipam;
  log: (event: string, fields: Record<string, unknown>) => void;
  /** A datastore call failed (the next reconcile tries again). */
  onDatastoreError: () => void;
}

export class VtepAllocator {
  private pending = false;

  constructor(private readonly options: VtepAllocatorOptions) {}

  /**
   * Gives `self` each tunnel address an enabled pool needs and it lacks: a VTEP per family for
   * VXLAN, tunl0's address for IPIP (taken from the IPIP pool, as Calico does). One attempt at a
   * time, one address after the other: each writes the whole Node.
   */
  async ensure(self: Node, pools: Iterable<IPPool>): Promise<void> {
    if (this.pending) return;
    const enabled = [...pools].filter((p) => !p.spec.disabled);
    const wanted: [TunnelKind, IPPool][] = [];
    for (const t of TUNNELS) {
      const mode = (p: IPPool) => p.spec[t.encap];
      const pool = enabled.find((p) => mode(p) && mode(p) !== 'Never' && (p.spec.cidr.includes(':') ? 6 : 4) === t.family);
      if (!pool || self.metadata.annotations?.[t.address]) continue;
      if (t.family === 6 && !self.spec.bgp?.ipv6Address) continue;
      wanted.push([t, pool]);
    }
    if (wanted.length === 0) return;
    this.pending = true;
    try {
      for (const [t, pool] of wanted) await this.allocate(self, pool, t);
    } finally {
      this.pending = false;
    }
  }

  private async allocate(self: Node, pool: IPPool, f: TunnelKind): Promise<void> {
    const { nodeName, datastore: ds, ipam, log } = this.options;
    try {
      // Decided from the Node as stored: the agent's copy may be behind the write of an address
      // just made, and asked again IPAM would give the handle a second address (the tunnel moves).
      if (((await ds.get('Node', nodeName)) ?? self).metadata.annotations?.[f.address]) return;
      const got = await ipam.autoAssign({
        handle: `${f.handle}${nodeName}`,
        node: nodeName,
        family: f.family,
        pools: [pool.metadata.name],
        attrs: { type: f.type },
      });
      // Read again just before the write: apply replaces the whole Node, and IPAM took a while.
      const current = (await ds.get('Node', nodeName)) ?? self;
      await ds.apply({
        ...current,
        metadata: {
          ...current.metadata,
          resourceVersion: undefined,
          annotations: {
            ...current.metadata.annotations,
            [f.address]: got.ip,
            ...(f.mac ? { [f.mac]: vtepMac(nodeName, f.family) } : {}),
          },
        },
      });
      log(f.event, { address: got.ip });
    } catch (e) {
      this.options.onDatastoreError();
      log(f.encap === 'ipipMode' ? 'ipip-tunnel-error' : 'vxlan-tunnel-error', { family: f.family, error: (e as Error).message });
    }
  }
}
