// This node's VXLAN tunnel endpoint: when a pool uses VXLAN, an address from IPAM (from one
// of the node's own blocks) and a MAC derived from the node name, stored in the Node's
// annotations for felix here and on every other node (our Node spec has no field for them).
import { createHash } from 'node:crypto';
import type { BackendDatastore } from '../datastore/index.js';
import type { Ipam } from '../ipam/index.js';
import { VXLAN_ADDRESS_ANNOTATION, VXLAN_MAC_ANNOTATION } from '../resources/annotations.js';
import type { IPPool, Node } from '../resources/types.js';

/** A locally administered unicast MAC derived from the node name (stable across restarts). */
export function vtepMac(node: string): string {
  const h = createHash('sha256').update(node).digest();
  return ['66', ...[...h.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0'))].join(':');
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

  /** Gives `self` a VTEP when an enabled pool uses VXLAN and it has none; one attempt at a time. */
  async ensure(self: Node, pools: Iterable<IPPool>): Promise<void> {
    const pool = [...pools].find((p) => !p.spec.disabled && p.spec.vxlanMode !== 'Never');
    if (!pool || self.metadata.annotations?.[VXLAN_ADDRESS_ANNOTATION] || this.pending) return;
    const { nodeName, datastore: ds, ipam, log } = this.options;
    this.pending = true;
    try {
      const got = await ipam.autoAssign({
        handle: `vxlan-tunnel-addr-${nodeName}`,
        node: nodeName,
        pools: [pool.metadata.name],
        attrs: { type: 'vxlanTunnelAddress' },
      });
      const current = (await ds.get('Node', nodeName)) ?? self;
      await ds.apply({
        ...current,
        metadata: {
          ...current.metadata,
          resourceVersion: undefined,
          annotations: { ...current.metadata.annotations, [VXLAN_ADDRESS_ANNOTATION]: got.ip, [VXLAN_MAC_ANNOTATION]: vtepMac(nodeName) },
        },
      });
      log('vxlan-tunnel-address', { address: got.ip });
    } catch (e) {
      this.options.onDatastoreError();
      log('vxlan-tunnel-error', { error: (e as Error).message });
    } finally {
      this.pending = false;
    }
  }
}
