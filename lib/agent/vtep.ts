// This node's VXLAN tunnel endpoints, one per family: when an enabled pool of that family uses
// VXLAN, an address from IPAM (from one of the node's own blocks of that family) and a MAC
// derived from the node name, stored in the Node's annotations for felix here and on every
// other node (our Node spec has no field for them). The IPv6 endpoint needs the node's IPv6
// address, since the other nodes reach it there (as Calico gives IPv6VXLANTunnelAddr only then).
import { createHash } from 'node:crypto';
import type { BackendDatastore } from '../datastore/index.js';
import {
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

/** Per family: the annotations, the IPAM handle (Calico's spelling) and the log event. */
const FAMILIES = {
  4: { address: VXLAN_ADDRESS_ANNOTATION, mac: VXLAN_MAC_ANNOTATION, handle: 'vxlan-tunnel-addr-', event: 'vxlan-tunnel-address' },
  6: {
    address: VXLAN_ADDRESS_V6_ANNOTATION,
    mac: VXLAN_MAC_V6_ANNOTATION,
    handle: 'vxlan-v6-tunnel-addr-',
    event: 'vxlan-v6-tunnel-address',
  },
} as const;

/** The IPAM handle of a node's VTEP address of one family. */
export function vtepHandle(node: string, family: 4 | 6 = 4): string {
  return `${FAMILIES[family].handle}${node}`;
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
   * Gives `self` a VTEP of each family an enabled VXLAN pool needs and it lacks. One attempt
   * at a time, the families one after the other: each writes the whole Node.
   */
  async ensure(self: Node, pools: Iterable<IPPool>): Promise<void> {
    if (this.pending) return;
    const vxlan = [...pools].filter((p) => !p.spec.disabled && p.spec.vxlanMode && p.spec.vxlanMode !== 'Never');
    const wanted: [4 | 6, IPPool][] = [];
    for (const family of [4, 6] as const) {
      const pool = vxlan.find((p) => (p.spec.cidr.includes(':') ? 6 : 4) === family);
      if (!pool || self.metadata.annotations?.[FAMILIES[family].address]) continue;
      if (family === 6 && !self.spec.bgp?.ipv6Address) continue;
      wanted.push([family, pool]);
    }
    if (wanted.length === 0) return;
    this.pending = true;
    try {
      for (const [family, pool] of wanted) await this.allocate(self, pool, family);
    } finally {
      this.pending = false;
    }
  }

  private async allocate(self: Node, pool: IPPool, family: 4 | 6): Promise<void> {
    const { nodeName, datastore: ds, ipam, log } = this.options;
    const f = FAMILIES[family];
    try {
      // Decided from the Node as stored: the agent's copy may be behind the write of a VTEP
      // just made, and asked again IPAM would give the handle a second address (the VTEP moves).
      if (((await ds.get('Node', nodeName)) ?? self).metadata.annotations?.[f.address]) return;
      const got = await ipam.autoAssign({
        handle: vtepHandle(nodeName, family),
        node: nodeName,
        family,
        pools: [pool.metadata.name],
        attrs: { type: 'vxlanTunnelAddress' },
      });
      // Read again just before the write: apply replaces the whole Node, and IPAM took a while.
      const current = (await ds.get('Node', nodeName)) ?? self;
      await ds.apply({
        ...current,
        metadata: {
          ...current.metadata,
          resourceVersion: undefined,
          annotations: { ...current.metadata.annotations, [f.address]: got.ip, [f.mac]: vtepMac(nodeName, family) },
        },
      });
      log(f.event, { address: got.ip });
    } catch (e) {
      this.options.onDatastoreError();
      log('vxlan-tunnel-error', { family, error: (e as Error).message });
    }
  }
}
