// A pod as the CNI plugin makes it, by hand, for the agent suites that test the agent and
// felix without the plugin: IPAM for each family under one handle, a veth whose host end has
// MAC ee:ee:ee:ee:ee:ee (hence the link-local gateway below), the addresses and default routes
// in the pod, and its WorkloadEndpoint.
import type { BackendDatastore } from '../../lib/datastore/index.js';
import { API_VERSION } from '../../lib/resources/index.js';
import { Ipam } from '../../lib/ipam/index.js';
import { run, type Lab, type Netns } from './netns.js';

/** The pod's IPv6 gateway: the kernel's own link-local address for the host end's MAC. */
export const GATEWAY_V6 = 'fe80::ecee:eeff:feee:eeee';

export interface HandMadePod {
  name: string;
  node: string;
  ns: Netns;
  iface: string;
  /** Absent for an IPv6-only pod. */
  ip?: string;
  ip6: string;
}

/** A pod with an address of each family. */
export type DualStackPod = HandMadePod & { ip: string };

export async function handMadePod(o: {
  lab: Lab;
  ds: BackendDatastore;
  /** The node's namespace, where the host end goes. */
  host: Netns;
  node: string;
  name: string;
  /** An IPv4 address too. Default true. */
  v4?: boolean;
  pools6?: string[];
}): Promise<HandMadePod> {
  const { lab, ds, host, node, name } = o;
  const ns = await lab.namespace(name);
  const ipam = new Ipam(ds);
  const attrs = { pod: name, namespace: 'default' };
  const v4 = o.v4 === false ? undefined : await ipam.autoAssign({ handle: `h-${name}`, node, attrs });
  const v6 = await ipam.autoAssign({ handle: `h-${name}`, node, attrs, family: 6, ...(o.pools6 ? { pools: o.pools6 } : {}) });
  const iface = `cali${name}`.slice(0, 15);
  await run(['ip', 'link', 'add', iface, 'netns', host.name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.name]);
  await host.ip('link', 'set', iface, 'address', 'ee:ee:ee:ee:ee:ee', 'up');
  await host.ip('-6', 'addr', 'add', `${GATEWAY_V6}/64`, 'dev', iface, 'nodad');
  if (v4) await ns.ip('addr', 'add', v4.cidr, 'dev', 'eth0');
  await ns.ip('-6', 'addr', 'add', v6.cidr, 'dev', 'eth0', 'nodad');
  await ns.ip('link', 'set', 'eth0', 'up');
  if (v4) await ns.ip('route', 'add', 'default', 'dev', 'eth0');
  await ns.ip('-6', 'route', 'add', 'default', 'via', GATEWAY_V6, 'dev', 'eth0');
  await ds.create({
    apiVersion: API_VERSION,
    kind: 'WorkloadEndpoint',
    metadata: { name: `${node}-k8s-${name}-eth0`, namespace: 'default' },
    spec: { node, pod: name, interfaceName: iface, ipNetworks: v4 ? [v4.cidr, v6.cidr] : [v6.cidr] },
  });
  return { name, node, ns, iface, ...(v4 ? { ip: v4.ip } : {}), ip6: v6.ip };
}
