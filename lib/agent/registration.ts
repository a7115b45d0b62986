// What the agent writes before it follows the cluster: its own Node (address, AS, cluster ID,
// labels merged into what is there), and the default pool when the cluster has none.
import { type BackendDatastore, AlreadyExistsError } from '../datastore/index.js';
import { API_VERSION, type IPPool, type Node } from '../resources/index.js';

export interface NodeRegistration {
  nodeName: string;
  /** The node's IPv4 address with prefix length; '' for an IPv6-only node (the Node keeps none). */
  address: string;
  /** The node's IPv6 address with prefix length; undefined leaves what the Node says. */
  addressV6?: string;
  asNumber?: number;
  /** A cluster ID makes the node a reflector; '' makes it stop being one; undefined leaves it. */
  routeReflectorClusterId?: string;
  labels?: Record<string, string>;
}

export interface DefaultPool {
  cidr: string;
  blockSize?: number;
  vxlanMode?: IPPool['spec']['vxlanMode'];
  ipipMode?: IPPool['spec']['ipipMode'];
  /** Masquerade traffic leaving every pool. Default true, as calico/node's default pool (CALICO_IPV4POOL_NAT_OUTGOING). */
  natOutgoing?: boolean;
}

/**
 * Writes the Node, keeping what others set on it (annotations, other labels, spec fields).
 * Returns the IPv6 address the Node has now (given, or set on the Node by the user).
 */
export async function registerNode(ds: BackendDatastore, r: NodeRegistration): Promise<string | undefined> {
  const existing = await ds.get('Node', r.nodeName);
  const bgp: NonNullable<Node['spec']['bgp']> = { ...existing?.spec.bgp, ipv4Address: r.address };
  if (!r.address) delete bgp.ipv4Address;
  if (r.addressV6 !== undefined) bgp.ipv6Address = r.addressV6;
  if (r.asNumber !== undefined) bgp.asNumber = r.asNumber;
  if (r.routeReflectorClusterId !== undefined) {
    if (r.routeReflectorClusterId) bgp.routeReflectorClusterID = r.routeReflectorClusterId;
    else delete bgp.routeReflectorClusterID;
  }
  const node: Node = {
    apiVersion: API_VERSION,
    kind: 'Node',
    metadata: {
      ...existing?.metadata,
      name: r.nodeName,
      labels: { ...existing?.metadata.labels, ...r.labels },
      resourceVersion: undefined,
    },
    spec: { ...existing?.spec, bgp },
  };
  await ds.apply(node);
  return bgp.ipv6Address;
}

/** Creates `default-ipv4-ippool` when the datastore has no pool at all (calico/node's CALICO_IPV4POOL_CIDR). */
export async function ensureDefaultPool(ds: BackendDatastore, d: DefaultPool | false | undefined): Promise<void> {
  if (!d) return;
  if ((await ds.list('IPPool')).items.length > 0) return;
  try {
    await ds.create({
      apiVersion: API_VERSION,
      kind: 'IPPool',
      metadata: { name: 'default-ipv4-ippool' },
      spec: {
        cidr: d.cidr,
        blockSize: d.blockSize ?? 26,
        ipipMode: d.ipipMode ?? 'Never',
        vxlanMode: d.vxlanMode ?? 'Never',
        natOutgoing: d.natOutgoing ?? true,
      },
    });
  } catch (e) {
    // Another node created it first.
    if (!(e instanceof AlreadyExistsError)) throw e;
  }
}
